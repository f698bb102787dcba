import CohortCore
import Foundation

/// The chaos test's workload: random groups (YAML specs) whose shell children record what
/// they do in a directory of logs, and write to a fenced resource that stands for the
/// outside world.
///
/// Every shell child runs `bash chaos-child DIR NAP HELD OWN FAIL_UNTIL EXPECT` (the script
/// is written once into DIR). It appends to DIR:
/// - `starts.log`: `start GROUP CHILD ATTEMPT WORKER PID STARTTICKS US` as it begins;
///   STARTTICKS is its process's start time in clock ticks since boot (`/proc/PID/stat`,
///   truncated, so a start after a moment measured in the same clock is never misjudged);
/// - `holds.log`: for each category it runs under (HELD: its own and its enclosing groups'),
///   `enter CAT TOKEN OWN GROUP CHILD ATTEMPT WORKER PID US` once it runs, and `leave … US
///   HOW` when it stops (`ok`, `fail` for a planned failure, `term` when stopped by SIGTERM;
///   nothing when killed by SIGKILL), so overlaps of holders can be computed;
/// - `fence.log`: through the fence, one write per category at its start and one at its end:
///   `accept|reject CAT TOKEN PID start|end US GROUP CHILD ATTEMPT WORKER`. The fence keeps the
///   largest token it accepted per category (`CAT.max`, under `flock` of `CAT.lock`) and
///   accepts a write only with a token at least that large;
/// - `done.log`: `done GROUP CHILD ATTEMPT WORKER US` once it completed successfully.
///
/// Times (US) are CLOCK_REALTIME microseconds (bash's `EPOCHREALTIME`), the clock the test
/// records its own actions in (``ChaosClock``).
enum ChaosWorkload {
    static let categories = ["alpha", "beta", "gamma"]

    static let childScript = #"""
        #!/bin/bash
        # chaos-child DIR NAP HELD OWN FAIL_UNTIL EXPECT (see ChaosWorkload.swift)
        D=$1; nap=$2; held=$3; own=$4; fail_until=$5; expect=$6
        tick() { t=${EPOCHREALTIME/./}; }
        me="$COHORT_GROUP $COHORT_CHILD $COHORT_ATTEMPT $COHORT_WORKER"
        read -r -a st < /proc/$$/stat
        tick; echo "start $me $$ ${st[21]} $t" >> "$D/starts.log"
        if [ "$expect" != "-" ] && [ "$INJECTED" != "$expect" ]; then
            echo "injected '$INJECTED', expected '$expect'" >&2; exit 9
        fi
        IFS=, read -r -a cats <<< "${held//-/}"
        declare -A tok
        for c in "${cats[@]}"; do
            v="COHORT_FENCE_${c^^}"; tok[$c]=${!v}
            if [ -z "${tok[$c]}" ]; then echo "notoken $c $me $$" >> "$D/holds.log"; echo "no $v" >&2; exit 8; fi
        done
        fence() { # CAT PHASE
            local m=0 v
            exec 9>>"$D/$1.lock"; flock 9
            [ -s "$D/$1.max" ] && read -r m < "$D/$1.max"
            tick
            if (( ${tok[$1]} >= m )); then echo "${tok[$1]}" > "$D/$1.max"; v=accept; else v=reject; fi
            echo "$v $1 ${tok[$1]} $$ $2 $t $me" >> "$D/fence.log"
            exec 9>&-
        }
        isown() { [[ ",$own," == *",$1,"* ]] && echo 1 || echo 0; }
        leave() {
            for c in "${cats[@]}"; do tick; echo "leave $c ${tok[$c]} $(isown $c) $me $$ $t $1" >> "$D/holds.log"; done
        }
        trap 'leave term; exit 143' TERM
        for c in "${cats[@]}"; do tick; echo "enter $c ${tok[$c]} $(isown $c) $me $$ $t" >> "$D/holds.log"; done
        for c in "${cats[@]}"; do fence "$c" start; done
        sleep "$nap" & wait $!
        for c in "${cats[@]}"; do fence "$c" end; done
        if [ "$COHORT_ATTEMPT" -lt "$fail_until" ]; then leave fail; echo "planned failure" >&2; exit 3; fi
        leave ok
        tick; echo "done $me $t" >> "$D/done.log"
        echo "ok $COHORT_CHILD"
        """#

    /// Writes the child script into `directory` and returns its path.
    static func install(in directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/chaos-child"
        try childScript.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// One child of a generated group (a procedure, or a nested group), as the test expects
    /// to find it among the children of `status --json`.
    struct PlannedChild {
        var path: String
        var shell: Bool
    }

    /// A generated group: its spec text and its children.
    struct PlannedGroup {
        var name: String
        var spec: String
        var children: [PlannedChild]
    }

    /// A random group named `name`. Exclusive categories at group and child level, from a few
    /// shared names; `after`, `inject` (from an `echo` producer into `env.INJECTED`, which the
    /// consumer checks), `retry` (some children fail their first attempt on purpose), shell
    /// children that sleep 50–600 ms (one in five 1.5–4 s), sometimes a nested sequence.
    ///
    /// With `nestedLocks` (the default), descendants of an exclusive group name other
    /// categories too, and members of nested groups wait for children outside them: the
    /// shapes of issue 12 item 2's deadlock, which a group's hold (covering its descendants'
    /// categories, taken once what they wait for outside has finished) rules out.
    static func group(
        _ name: String, directory: String, script: String, nestedLocks: Bool, random: inout SplitMix64
    ) -> PlannedGroup {
        func chance(_ p: Double) -> Bool { random.unit() < p }
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        func someCategories(from pool: [String], max: Int) -> [String] {
            let count = 1 + Int(random.next() % UInt64(Swift.min(max, pool.count)))
            var left = pool
            var chosen: [String] = []
            for _ in 0..<count {
                let index = Int(random.next() % UInt64(left.count))
                chosen.append(left.remove(at: index))
            }
            return chosen.sorted()
        }

        let sequence = chance(0.2)
        let groupExclusive = chance(0.3) ? someCategories(from: categories, max: 1) : []
        var lines = ["name: \(name)", "mode: \(sequence ? "sequence" : "parallel")"]
        lines.append("onChildFailure: \(pick(["continue", "cancel-dependents", "cancel-dependents"]))")
        if !groupExclusive.isEmpty { lines.append("exclusive: [\(groupExclusive.joined(separator: ", "))]") }
        lines.append("children:")
        var children: [PlannedChild] = []
        var names: [String] = []
        var producers: [(name: String, value: String)] = []

        /// A shell leaf's lines at `indent`, under `held` categories of enclosing groups,
        /// choosing its own from `pool` (nil: any).
        func shellLeaf(_ leaf: String, path: String, indent: String, held: [String], pool: [String]?) -> [String] {
            var own: [String] = []
            if chance(0.45) {
                let from = pool ?? categories
                if !from.isEmpty { own = someCategories(from: from, max: 2) }
            }
            var out = ["\(indent)- name: \(leaf)", "\(indent)  run: shell"]
            if !own.isEmpty { out.append("\(indent)  exclusive: [\(own.joined(separator: ", "))]") }
            var failUntil = 0
            if chance(0.5) {
                out.append("\(indent)  retry: { attempts: 3, backoff: 100ms }")
                if chance(0.3) { failUntil = 2 }
            }
            var expect = "-"
            if !sequence, let producer = producers.last, chance(0.5) {
                out.append("\(indent)  inject:")
                out.append("\(indent)    - { from: \(producer.name), select: value, into: env.INJECTED }")
                expect = producer.value
            }
            if !sequence, !names.isEmpty, chance(0.3) { out.append("\(indent)  after: [\(pick(names))]") }
            // Mostly short; one in five long enough to outlive its worker's liveness when paused.
            let nap = String(format: "%.2f", chance(0.2) ? 1.5 + random.unit() * 2.5 : 0.05 + random.unit() * 0.55)
            let allHeld = Array(Set(held + own)).sorted()
            let arguments = [
                "bash", script, directory, nap, allHeld.isEmpty ? "-" : allHeld.joined(separator: ","),
                own.isEmpty ? "-" : own.joined(separator: ","), "\(failUntil)", expect,
            ]
            out.append("\(indent)  with: { command: [\(arguments.map { "\"\($0)\"" }.joined(separator: ", "))] }")
            children.append(PlannedChild(path: path, shell: true))
            return out
        }

        let count = 2 + Int(random.next() % 5)
        for index in 1...count {
            let topPool: [String]? = groupExclusive.isEmpty ? nil : groupExclusive
            if !sequence, chance(0.2) {
                let producer = "p\(index)"
                let value = "\(name)-\(producer)"
                lines += ["  - name: \(producer)", "    run: echo", "    with: { value: \"\(value)\" }"]
                children.append(PlannedChild(path: producer, shell: false))
                producers.append((producer, value))
                names.append(producer)
            } else if chance(0.15) {
                // A nested sequence, exclusive itself only where nothing above it holds a lock.
                let nested = "n\(index)"
                var nestedExclusive: [String] = []
                if groupExclusive.isEmpty || nestedLocks, chance(0.4) {
                    nestedExclusive = someCategories(from: categories, max: 1)
                }
                lines += ["  - name: \(nested)"]
                children.append(PlannedChild(path: nested, shell: false))
                if !nestedExclusive.isEmpty {
                    lines.append("    exclusive: [\(nestedExclusive.joined(separator: ", "))]")
                }
                if !sequence, !names.isEmpty, chance(0.3) { lines.append("    after: [\(pick(names))]") }
                lines += ["    group:", "      mode: sequence", "      children:"]
                let held = Array(Set(groupExclusive + nestedExclusive)).sorted()
                let pool: [String]? =
                    nestedLocks
                    ? nil
                    : (!groupExclusive.isEmpty ? groupExclusive : (nestedExclusive.isEmpty ? nil : nestedExclusive))
                // Members may wait for (or inject from) children outside: an exclusive nested
                // group takes its hold only once those have finished.
                for inner in 1...2 {
                    lines += shellLeaf(
                        "s\(inner)", path: "\(nested)/s\(inner)", indent: "        ", held: held, pool: pool)
                }
                names.append(nested)
            } else {
                let leaf = "c\(index)"
                lines += shellLeaf(
                    leaf, path: leaf, indent: "  ", held: groupExclusive, pool: nestedLocks ? nil : topPool)
                names.append(leaf)
            }
        }
        return PlannedGroup(name: name, spec: lines.joined(separator: "\n") + "\n", children: children)
    }
}

/// The clocks the chaos test compares with its children's records.
enum ChaosClock {
    /// CLOCK_REALTIME in microseconds (bash's `EPOCHREALTIME`).
    static func microseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
    }

    /// CLOCK_BOOTTIME in clock ticks, truncated (the unit of a process's start time in
    /// `/proc/PID/stat`).
    static func bootTicks() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let hertz = Int64(sysconf(Int32(_SC_CLK_TCK)))
        return Int64(now.tv_sec) * hertz + Int64(now.tv_nsec) * hertz / 1_000_000_000
    }
}

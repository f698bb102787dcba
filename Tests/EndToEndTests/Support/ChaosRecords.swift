import Foundation

/// What the chaos test's children recorded (``ChaosWorkload``) and what the test did, and the
/// analyses over them: holder intervals per category, overlaps, token order, fence writes.
struct ChaosRecords {
    /// One process's stay in one category, from its `enter` and `leave` lines.
    struct Interval: CustomStringConvertible {
        var category: String
        var token: Int64
        /// Whether the child named the category itself (not only an enclosing group).
        var own: Bool
        var group: String
        var child: String
        var attempt: Int
        var worker: String
        var pid: Int32
        var enter: Int64
        /// When it left; for a process killed by SIGKILL (no `leave`), its worker's kill, or
        /// (its worker not killed) 10 s after it entered, longer than any child lives.
        var leave: Int64
        /// `ok`, `fail`, `term`, or `killed` (no `leave` line).
        var how: String

        var description: String {
            "\(group)/\(child)#\(attempt) on \(worker) pid \(pid) \(category)=\(token)\(own ? "" : " (group's)") "
                + "[\(enter), \(leave)] \(how)"
        }

        func overlaps(_ other: Interval) -> Bool { enter < other.leave && other.enter < leave }

        /// Whether the two must exclude each other: holders in different groups; in one
        /// group, two children, or two attempts of one child, that both name the category
        /// (each takes it from the group's hold with a token of its own). A child that runs
        /// only under its group's hold (it does not name the category) excludes nothing inside
        /// its group, not even another attempt of itself after a worker loss: the group is the
        /// holder, and its token is what both show (docs/scheduling.md, "Leases").
        func excludes(_ other: Interval) -> Bool {
            guard category == other.category, pid != other.pid else { return false }
            guard group == other.group else { return true }
            return own && other.own
        }
    }

    /// A write that reached the fence.
    struct FenceWrite {
        var accepted: Bool
        var category: String
        var token: Int64
        var pid: Int32
        var time: Int64
    }

    /// A child process's start.
    struct Start {
        var group: String
        var child: String
        var attempt: Int
        var worker: String
        var pid: Int32
        var startTicks: Int64
        var time: Int64
    }

    /// A fault the test caused: a window of a worker's lease loss.
    struct Fault {
        enum Kind: String { case kill, pause, partition }
        var kind: Kind
        var worker: String
        var start: Int64
        /// When it was undone (a kill is never: `Int64.max`).
        var end: Int64
    }

    var intervals: [Interval] = []
    var fenceWrites: [FenceWrite] = []
    var starts: [Start] = []
    /// `done` lines: group → child → attempts that completed successfully.
    var done: [String: [String: [Int]]] = [:]
    /// Children that ran without the fencing token of a category they hold.
    var missingTokens: [String] = []

    static func lines(_ path: String) -> [[String]] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map {
            $0.split(separator: " ").map(String.init)
        }
    }

    /// Reads the logs of `directory`; `faults` and `end` give the end of intervals without a
    /// `leave` (killed).
    init(directory: String, faults: [Fault], end: Int64) {
        var open: [String: Interval] = [:]
        func key(_ category: String, _ pid: String) -> String { "\(category) \(pid)" }
        for fields in Self.lines(directory + "/holds.log") {
            switch fields.first {
            case "enter" where fields.count == 10:
                guard let token = Int64(fields[2]), let attempt = Int(fields[6]), let pid = Int32(fields[8]),
                    let time = Int64(fields[9])
                else { continue }
                open[key(fields[1], fields[8])] = Interval(
                    category: fields[1], token: token, own: fields[3] == "1", group: fields[4], child: fields[5],
                    attempt: attempt, worker: fields[7], pid: pid, enter: time, leave: time, how: "killed")
            case "leave" where fields.count == 11:
                guard var interval = open.removeValue(forKey: key(fields[1], fields[8])),
                    let time = Int64(fields[9])
                else { continue }
                interval.leave = time
                interval.how = fields[10]
                intervals.append(interval)
            case "notoken":
                missingTokens.append(fields.dropFirst().joined(separator: " "))
            default: continue
            }
        }
        for var interval in open.values {
            let kill = faults.filter { $0.kind == .kill && $0.worker == interval.worker && $0.start >= interval.enter }
                .map(\.start).min()
            // Not killed with its worker: stopped by SIGKILL otherwise (after a kill grace); no
            // child lives longer than 10 s.
            interval.leave = kill ?? min(end, interval.enter + 10_000_000)
            intervals.append(interval)
        }
        intervals.sort { $0.enter < $1.enter }
        for fields in Self.lines(directory + "/fence.log") where fields.count >= 6 {
            guard let token = Int64(fields[2]), let pid = Int32(fields[3]), let time = Int64(fields[5]) else {
                continue
            }
            fenceWrites.append(
                FenceWrite(accepted: fields[0] == "accept", category: fields[1], token: token, pid: pid, time: time))
        }
        for fields in Self.lines(directory + "/starts.log") where fields.count == 8 {
            guard let attempt = Int(fields[3]), let pid = Int32(fields[5]), let ticks = Int64(fields[6]),
                let time = Int64(fields[7])
            else { continue }
            starts.append(
                Start(
                    group: fields[1], child: fields[2], attempt: attempt, worker: fields[4], pid: pid,
                    startTicks: ticks,
                    time: time))
        }
        for fields in Self.lines(directory + "/done.log") where fields.count == 6 {
            guard let attempt = Int(fields[3]) else { continue }
            done[fields[1], default: [:]][fields[2], default: []].append(attempt)
        }
    }

    // MARK: - Analyses

    /// Whether `interval`'s holder lost its lease: its worker was killed, paused or cut off
    /// while it ran (or up to `slack` after the worker came back, for a dispatch it had
    /// received before and started late), or the coordinator gave its child a later attempt
    /// while it had not failed on its own (`latestAttempt`: group → child → attempt).
    static func lostLease(
        _ interval: Interval, faults: [Fault], latestAttempt: [String: [String: Int]], slack: Int64
    ) -> Bool {
        let hit = faults.contains { fault in
            fault.worker == interval.worker && fault.start <= interval.leave
                && interval.enter <= (fault.end == Int64.max ? Int64.max : fault.end + slack)
        }
        if hit { return true }
        if let latest = latestAttempt[interval.group]?[interval.child], interval.attempt < latest,
            interval.how != "fail"
        {
            return true
        }
        return false
    }

    /// Two holders of one category that must exclude each other and ran at the same time.
    struct Overlap: CustomStringConvertible {
        var older: Interval
        var newer: Interval
        var olderLost: Bool
        var newerLost: Bool
        /// Writes of the older holder the fence accepted after the newer holder's first
        /// accepted write.
        var staleAccepted: Int
        /// Writes of the older holder the fence rejected.
        var staleRejected: Int

        var description: String {
            "\(older) [lease \(olderLost ? "lost" : "kept")] and \(newer) [lease \(newerLost ? "lost" : "kept")]"
                + ", stale writes accepted \(staleAccepted), rejected \(staleRejected)"
        }
    }

    func overlaps(lost: (Interval) -> Bool) -> [Overlap] {
        var result: [Overlap] = []
        let byCategory = Dictionary(grouping: intervals, by: \.category)
        let writesByHolder = Dictionary(grouping: fenceWrites) { "\($0.category) \($0.pid)" }
        for (_, holders) in byCategory {
            for (index, first) in holders.enumerated() {
                for second in holders[(index + 1)...] where first.excludes(second) && first.overlaps(second) {
                    let (older, newer) =
                        first.token != second.token
                        ? (first.token < second.token ? (first, second) : (second, first))
                        : (first.enter <= second.enter ? (first, second) : (second, first))
                    let newerFirst =
                        writesByHolder["\(newer.category) \(newer.pid)"]?.filter(\.accepted).map(\.time).min()
                        ?? Int64.max
                    let stale = (writesByHolder["\(older.category) \(older.pid)"] ?? []).filter { $0.time > newerFirst }
                    result.append(
                        Overlap(
                            older: older, newer: newer, olderLost: lost(older), newerLost: lost(newer),
                            staleAccepted: stale.filter(\.accepted).count,
                            staleRejected: stale.filter { !$0.accepted }.count))
                }
            }
        }
        return result
    }

    /// Holders that entered a category with a token smaller than one that entered it before
    /// (by time), among those that kept their lease: grants out of order, or a token reused
    /// or smaller after a coordinator restart.
    /// Only holders that must exclude each other are ordered: a child running under its
    /// group's hold keeps the group's (older) token while a sibling that names the category
    /// has a newer one of its own.
    func tokenOrderViolations(lost: (Interval) -> Bool) -> [String] {
        var violations: [String] = []
        for (category, holders) in Dictionary(grouping: intervals, by: \.category) {
            let ordered = holders.sorted { $0.enter < $1.enter }
            for (index, holder) in ordered.enumerated() where !lost(holder) {
                if let before = ordered[..<index].first(where: { $0.token > holder.token && $0.excludes(holder) }) {
                    violations.append("\(category): \(holder) entered after \(before)")
                }
            }
        }
        return violations
    }

    /// The fence's own rule, checked from its log: per category, no write accepted with a
    /// token smaller than one accepted before.
    func fenceViolations() -> [String] {
        var largest: [String: Int64] = [:]
        var violations: [String] = []
        for write in fenceWrites where write.accepted {
            if let before = largest[write.category], write.token < before {
                violations.append("\(write.category): accepted \(write.token) after \(before) (pid \(write.pid))")
            }
            largest[write.category] = max(largest[write.category] ?? write.token, write.token)
        }
        return violations
    }
}

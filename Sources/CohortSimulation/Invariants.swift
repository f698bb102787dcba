import CohortCore
import CohortSpec
import Foundation

/// What the invariants remember of the run (outside the scheduler: what clients were told,
/// what the journal holds, which tokens were handed out).
struct Checker {
    /// Groups the coordinator accepted (journaled), as it accepted them.
    var known: [String: FlatSpec] = [:]
    /// Per map with `maxParallel` ("group/path"): its procedures dispatched and unfinished.
    var mapInFlight: [String: Set<String>] = [:]
    /// Groups a client got an id for (it received the reply).
    var accepted: [String: FlatSpec] = [:]
    var groupOutcomes: [String: GroupPhase] = [:]
    /// `group/path` → the child's outcome, as journaled.
    var childOutcomes: [String: ChildPhase] = [:]
    /// `group/path` → a succeeded child's output.
    var outputs: [String: Data] = [:]
    /// The largest token seen per category, over every incarnation of the coordinator.
    var maxToken: [String: UInt64] = [:]
    /// Counting locks: the attempt each token was dispatched with, per category.
    var tokenAttempts: [String: [UInt64: AttemptID]] = [:]
    /// Attempts a worker received a cancel for while it held them waiting: they must never start.
    var cancelledAtWorker: Set<AttemptID> = []
    /// Cancels a client was told were accepted (it received the acknowledgement): group →
    /// paths (`""` for the whole group).
    var acknowledgedCancels: [String: [String]] = [:]
    /// `group/path` → the id of the child's latest attempt sent to a worker (journaled).
    var latestAttempt: [String: AttemptID] = [:]
    /// Attempt id → the outputs workers decided for it when they started it (more than one
    /// if a duplicated dispatch ran it again).
    var startedOutputs: [AttemptID: [Data]] = [:]
    /// `group/path` of every child an attempt of which was dispatched (journaled).
    var dispatchedChildren: Set<String> = []
    /// `group/path` → the attempts whose successful runs of a repeating child a coordinator
    /// accepted (a result sent again to the next leader is the same run).
    var repeatRuns: [String: Set<AttemptID>] = [:]

    func cancelAcknowledged(group: String, path: String) -> Bool {
        (acknowledgedCancels[group] ?? []).contains { $0.isEmpty || path == $0 || path.hasPrefix($0 + "/") }
    }
}

extension Simulation {
    /// How often (in steps) ``checkObservationBookkeeping()`` runs.
    static let summaryInterval = 100

    /// `exactly-one-outcome`: a child's outcome is journaled once and never followed by
    /// another record of the child. `outcome-of-current-attempt`: a child that succeeded has
    /// the output its latest attempt produced (not a superseded attempt's).
    mutating func checkRecord(_ record: JournalRecord) {
        switch record {
        case .childrenAdded(let group, let into, let children, _):
            checkMapExpansion(group, into, children)
        case .finished(let child):
            let key = "\(child.group)/\(child.path)"
            guard case .finished(let phase) = child.state else { return }
            if let earlier = checker.childOutcomes[key] {
                return fail(.oneOutcome, "child \(key) finished twice: \(earlier), then \(phase)")
            }
            checker.childOutcomes[key] = phase
            if let map = mapOf(child) { checker.mapInFlight[map.key]?.remove(child.path) }
            if phase == .skipped { note("child skipped") }
            if phase == .skipped, checker.dispatchedChildren.contains(key) {
                fail(.skippedNeverRan, "child \(key) ended skipped after an attempt of it was dispatched")
            }
            if let output = child.output { checker.outputs[key] = output }
            if phase == .succeeded, let output = child.output, let latest = checker.latestAttempt[key],
                !(checker.startedOutputs[latest] ?? []).contains(output)
            {
                fail(
                    .outcomeOfCurrentAttempt,
                    "child \(key) succeeded with \(String(decoding: output, as: UTF8.self)), which its latest attempt "
                        + "(#\(child.attempt) id=\(latest)) did not produce")
            }
        case .dispatched(let child):
            let key = "\(child.group)/\(child.path)"
            checker.latestAttempt[key] = child.attemptID
            checker.dispatchedChildren.insert(key)
            checkMapParallel(child)
            if let earlier = checker.childOutcomes[key] {
                fail(.oneOutcome, "child \(key) dispatched (attempt \(child.attempt)) after it finished \(earlier)")
            }
        default:
            break
        }
    }

    /// `repeat-bounded`: a repeating child never has more successful runs than its `max`
    /// (counted by attempt as the coordinators accept them, across restarts and leaders).
    mutating func checkRepeatRun(_ ref: AttemptRef) {
        guard let leaf = checker.known[ref.group]?.leaf(at: ref.path), let repeating = leaf.repeating else { return }
        let key = "\(ref.group)/\(ref.path)"
        guard checker.repeatRuns[key, default: []].insert(ref.id).inserted else {
            return note("repeat run accepted again")
        }
        note("repeat run")
        let runs = checker.repeatRuns[key]!.count
        if runs > repeating.max {
            fail(.repeatBounded, "child \(key) ran \(runs) times, more than its max \(repeating.max)")
        }
    }

    /// `exactly-one-outcome` for groups: one outcome, and only once every child has its own
    /// outcome in the journal.
    mutating func checkGroupFinished(_ group: String, _ phase: GroupPhase) {
        if let earlier = checker.groupOutcomes[group] {
            return fail(.oneOutcome, "group \(group) finished twice: \(earlier), then \(phase)")
        }
        checker.groupOutcomes[group] = phase
        guard let flat = checker.known[group] else { return }
        if let open = flat.leaves.first(where: { checker.childOutcomes["\(group)/\($0.path)"] == nil }) {
            fail(
                .oneOutcome,
                "group \(group) finished \(phase) while its child \(open.path) has no outcome in the journal")
        }
    }

    /// `dependencies-finish-first`, `fencing-tokens-increase`,
    /// `no-start-after-cancel-acknowledged`, `injected-input-is-producer-output`.
    mutating func checkDispatch(_ order: DispatchOrder) {
        let group = order.ref.group
        guard let flat = checker.known[group], let leaf = flat.leaf(at: order.ref.path) else {
            return fail(.acceptedIsJournaled, "dispatch of \(order.ref) of a group the coordinator never accepted")
        }
        if checker.cancelAcknowledged(group: group, path: order.ref.path) {
            return fail(.noStartAfterCancelAck, "\(order.ref) dispatched after a cancel covering it was acknowledged")
        }
        for dependency in flat.dependencyPaths(of: leaf) {
            let phase = (try? scheduler?.childSnapshot(group, path: dependency))?.phase
            let journaled = flat.leaf(at: dependency) == nil || checker.childOutcomes["\(group)/\(dependency)"] != nil
            if phase?.isFinished != true || !journaled {
                return fail(
                    .dependenciesFirst,
                    "\(order.ref) dispatched before \(dependency) finished (\(String(describing: phase)))")
            }
        }
        for category in leaf.acquires {
            guard let token = order.tokens[category] else {
                return fail(.tokensIncrease, "\(order.ref) dispatched without a token for \(category)")
            }
            // A counting lock's holders may be dispatched in another order than they were
            // granted: each has a token of its own, never another attempt's, and above every
            // token of an earlier incarnation of the coordinator (the epoch's high bits).
            if Self.limit(of: category) > 1 {
                if let other = checker.tokenAttempts[category]?[token], other != order.ref.id {
                    return fail(
                        .tokensIncrease, "\(order.ref) got token \(token) for \(category), already attempt \(other)'s")
                }
                let last = checker.maxToken[category, default: 0]
                if token >> 32 < last >> 32 {
                    return fail(
                        .tokensIncrease,
                        "\(order.ref) got token \(token) for \(category), from an earlier epoch than \(last)")
                }
                checker.tokenAttempts[category, default: [:]][token] = order.ref.id
                checker.maxToken[category] = max(last, token)
                continue
            }
            if token <= checker.maxToken[category, default: 0] {
                return fail(
                    .tokensIncrease,
                    "\(order.ref) got token \(token) for \(category), not above \(checker.maxToken[category]!)")
            }
            checker.maxToken[category] = token
        }
        guard !leaf.inject.isEmpty else { return }
        let input = (try? JSONValue(jsonData: order.input))?.objectValue ?? [:]
        for injection in leaf.inject {
            let name = injection.producerPath.split(separator: "/").last.map(String.init) ?? injection.producerPath
            // A fan-out (matrix) producer gives the list of its procedures' values, in order.
            let producers = injection.gathers.map { Array($0) } ?? [injection.producer]
            var values: [JSONValue] = []
            for index in producers {
                let producer = "\(group)/\(flat.leaves[index].path)"
                guard let output = checker.outputs[producer],
                    let value = (try? JSONValue(jsonData: output))?.objectValue?["n"]
                else {
                    return fail(
                        .injectedIsProducerOutput,
                        "\(order.ref) dispatched, producer \(producer) has no journaled output")
                }
                values.append(value)
            }
            let expected = injection.gathers == nil ? values[0] : .array(values)
            if input["from_\(name)"] != expected {
                return fail(
                    .injectedIsProducerOutput,
                    "\(order.ref) input \(String(decoding: order.input, as: UTF8.self)) got \(String(describing: input["from_\(name)"])) from \(injection.producerPath), which output \(expected)"
                )
            }
        }
    }

    /// `no-start-after-cancel-acknowledged`, at the worker; notes the output it decided.
    mutating func checkStart(_ order: DispatchOrder, worker: Int) {
        if checker.cancelledAtWorker.contains(order.ref.id) {
            fail(.noStartAfterCancelReceived, "w\(worker) started \(order.ref) after it received its cancel")
        }
        if case .succeeded(let output)? = workers[worker].engine[order.ref.id.rawValue]?.outcome {
            checker.startedOutputs[order.ref.id, default: []].append(output)
        }
        if checker.cancelAcknowledged(group: order.ref.group, path: order.ref.path) {
            fail(.noStartAfterCancelAck, "w\(worker) started \(order.ref) after a cancel covering it was acknowledged")
        }
    }

    /// `accepted-groups-journaled`, as the client receives its id: the group is in the
    /// journal, and a resubmission with its id is idempotent.
    mutating func checkAccepted(_ id: String, wasAccepted: Bool, alreadySubmitted: Bool) {
        if journal.groups[id] == nil { fail(.acceptedIsJournaled, "\(id) accepted but not in the journal") }
        // What a client was told is accepted, the coordinator that leads knows (a deposed
        // leader that committed after the standby loaded the journal would break this).
        if let scheduler, !scheduler.contains(group: id) {
            fail(
                .acceptedIsJournaled, "\(id) accepted, but the coordinator that leads (epoch \(epoch)) does not know it"
            )
        }
        if wasAccepted, !alreadySubmitted {
            fail(.acceptedIsJournaled, "\(id) resubmitted and accepted anew: the coordinator had lost it")
        }
    }

    /// After every step: `no-two-live-holders` — never more live holders of a category than
    /// its limit (1 for an exclusive lock; ``Simulation/limit(of:)`` for a counting lock).
    ///
    /// A *live holder* of category C is an attempt that a worker which is up has started and
    /// not ended (finished, cancelled, or killed when its lease ended), whose dispatch lists C
    /// in `holds` (categories it holds itself). More distinct fencing tokens of C among live
    /// holders than C's limit are a violation. Attempts that only run under a group's hold
    /// carry the group's token and are not holders themselves (docs/scheduling.md, "Leases":
    /// the group's grant does not depend on any one worker); two attempts with the same token
    /// are the same grant (a group's table, or a stale and a new attempt of one child under
    /// its group).
    mutating func checkAfterStep() {
        if step % Self.summaryInterval == 0 {
            checkObservationBookkeeping()
            if failure != nil { return }
        }
        var holders: [String: [UInt64: (ref: AttemptRef, worker: Int)]] = [:]
        // A paused worker whose lease ended cannot stop what it runs; its grants were
        // revoked, and what it would write is fenced by its tokens (docs/simulation.md).
        for worker in workers where worker.up && !(worker.paused && !worker.machine.session.holdsLease(at: now)) {
            for attempt in worker.engine.values.sorted(by: { $0.order.ref.id < $1.order.ref.id }) {
                // What it holds itself, and what its code was granted (worker-local locks).
                var held = attempt.order.holds.map { ($0, attempt.order.tokens[$0] ?? 0) }
                for request in attempt.locks.keys.sorted() {
                    guard case .some(.some(let tokens)) = attempt.locks[request] else { continue }
                    held += tokens.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
                }
                for (category, token) in held {
                    holders[category, default: [:]][token] = (attempt.order.ref, worker.index)
                    guard let live = holders[category], live.count > Self.limit(of: category) else { continue }
                    let list = live.sorted { $0.key < $1.key }.map { token, holder in
                        "\(holder.ref) id=\(holder.ref.id) on w\(holder.worker) (token \(token))"
                    }
                    return fail(
                        .exclusiveHolders,
                        "\(category) (limit \(Self.limit(of: category))) held by \(list.joined(separator: " and "))")
                }
            }
        }
    }

    /// `bounded-observation-bookkeeping`: after ``Scheduler/summary()`` (which the coordinator
    /// calls for its gauges), the scheduler keeps the times of no more lock requests than the
    /// lock table has. Checked every ``summaryInterval`` steps (a summary walks every group).
    mutating func checkObservationBookkeeping() {
        guard var scheduler else { return }
        _ = scheduler.summary()
        self.scheduler = scheduler
        let counts = scheduler.locks.requestCounts
        if scheduler.lockTimingCount > counts.granted + counts.waiting {
            fail(
                .boundedObservations,
                "the scheduler keeps the times of \(scheduler.lockTimingCount) lock requests after summary(), "
                    + "the lock table has \(counts.granted) granted and \(counts.waiting) waiting")
        }
    }

    /// After a restart: every accepted group is known to the restored scheduler.
    mutating func checkRestored() {
        guard let scheduler else { return }
        for id in checker.accepted.keys.sorted() where !scheduler.contains(group: id) {
            return fail(.acceptedIsJournaled, "\(id) was accepted but the restarted coordinator does not know it")
        }
    }
}

// MARK: Maps

extension Simulation {
    /// The map with `maxParallel` a journaled child belongs to: its key and limit.
    func mapOf(_ child: ChildRecord) -> (key: String, limit: Int)? {
        guard let slash = child.path.lastIndex(of: "/"),
            let limit = checker.known[child.group]?.group(at: String(child.path[..<slash]))?.fanOut?.map?.map
                .maxParallel
        else { return nil }
        return ("\(child.group)/\(child.path[..<slash])", limit)
    }

    /// `map-parallel-bounded`, as an attempt of a map's procedure is dispatched.
    mutating func checkMapParallel(_ child: ChildRecord) {
        guard let map = mapOf(child) else { return }
        checker.mapInFlight[map.key, default: []].insert(child.path)
        let running = checker.mapInFlight[map.key]!
        if running.count > map.limit {
            fail(
                .mapParallelBounded,
                "map \(map.key) (maxParallel \(map.limit)) has \(running.sorted()) dispatched at once")
        }
    }

    /// `map-makes-one-procedure-per-item`, as a map's fan-out is journaled; then the group's
    /// known leaves grow with it (an addition by a child updates them itself).
    mutating func checkMapExpansion(_ group: String, _ into: String, _ children: [ChildSpec]) {
        defer {
            if let spec = try? scheduler?.runningSpec(group) { checker.known[group] = spec.flattened() }
        }
        guard let flat = checker.known[group], let map = flat.group(at: into), let fanOut = map.fanOut?.map else {
            return
        }
        note("map fans out")
        guard let producer = map.mapProducer, flat.leaves.indices.contains(producer),
            let output = checker.outputs["\(group)/\(flat.leaves[producer].path)"],
            case .array(let items)? = (try? JSONValue(jsonData: output))?.select(fanOut.map.select)
        else {
            return fail(.mapMakesItsList, "map \(group)/\(into) fanned out without a journaled list from its producer")
        }
        let made = children.map { $0.input?["map"]?["item"] ?? .null }
        if children.map(\.name) != items.indices.map({ MapSpec.childName(map.name, index: $0) }) || made != items {
            fail(
                .mapMakesItsList,
                "map \(group)/\(into) made \(children.map(\.name)) with items \(made) from the list \(items)")
        }
    }
}

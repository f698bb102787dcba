import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// Random specs, random workers and random interleavings of events, with the cluster's
/// guarantees checked after every step.
@Suite struct RandomizedInvariantTests {
    @Test(arguments: 0..<8)
    func invariantsHoldUnderRandomEventInterleavings(batch: Int) throws {
        for round in 0..<60 {
            var random = SplitMix64(seed: UInt64(batch * 1000 + round + 1))
            try runOnce(&random)
        }
    }

    /// A worker's labels: none, one or both of `x` and `y` (children may require either).
    private func randomLabels(_ random: inout SplitMix64) -> [String] {
        ["x", "y"].filter { _ in random.int(0...1) == 0 }
    }

    private func runOnce(_ random: inout SplitMix64) throws {
        var h = SchedulerHarness(prefetch: random.int(0...3)) { $0.randomSeed = random.next() }
        var workerNumber: UInt64 = 0
        for _ in 0..<random.int(1...3) {
            workerNumber += 1
            h.addWorker(workerNumber, slots: random.int(1...3), labels: randomLabels(&random))
        }
        var labelledForDrain = false
        var flats: [String: FlatSpec] = [:]
        for index in 0..<random.int(1...3) {
            let spec = randomSpec(&random, name: "g\(index)")
            try spec.validate()
            flats["g\(index)"] = spec.flattened()
            try h.submit(spec, id: "g\(index)")
        }
        var checker = InvariantChecker(flats: flats)
        try checker.check(&h, from: 0)
        /// Attempts of lost workers, whose late reports are sent now and then.
        var late: [(SessionID, DispatchOrder)] = []

        var steps = 0
        while h.finished.count < flats.count {
            steps += 1
            let from = h.log.count
            let drain = steps > 400
            if drain, !labelledForDrain {
                // So that every child can finish: a worker that offers every label.
                labelledForDrain = true
                workerNumber += 1
                h.addWorker(workerNumber, slots: 2, labels: ["x", "y"])
            }
            let choice = drain ? 0 : random.int(0...99)
            let running = h.running.values.sorted { $0.order.ref.id < $1.order.ref.id }
            switch choice {
            case 0..<45 where !running.isEmpty:
                let pick = running[random.int(0...(running.count - 1))]
                if let reason = h.cancels[pick.order.ref.id] {
                    try h.finish(pick.order, .cancelled(reason: .custom(reason)))
                } else if random.int(0...9) < 7 || drain {
                    try h.finish(pick.order, .succeeded(output: JSONValue.object(["n": .int(Int64(steps))]).jsonData()))
                } else {
                    try h.finish(pick.order, .failed(error: "random failure"))
                }
            case 45..<55 where !running.isEmpty:
                let pick = running[random.int(0...(running.count - 1))]
                try h.start(pick.order)
            case 55..<58:
                let group = "g\(random.int(0...(flats.count - 1)))"
                h.record(try h.scheduler.cancelGroup(group, reason: "random cancel", now: h.now))
            case 58..<62:
                let group = "g\(random.int(0...(flats.count - 1)))"
                let paths = flats[group]!.leaves.map(\.path) + flats[group]!.groups.map(\.path).filter { !$0.isEmpty }
                let path = paths[random.int(0...(paths.count - 1))]
                h.record(try h.scheduler.cancelChild(group, path: path, reason: "random child cancel", now: h.now))
            case 62..<65 where !late.isEmpty && random.int(0...2) == 0:
                // A lost worker's late report: refused, and it changes nothing.
                let (worker, order) = late.removeFirst()
                let before = try h.scheduler.childSnapshot(order.ref.group, path: order.ref.path)
                #expect(throws: SchedulerError.self) {
                    try h.scheduler.attemptFinished(
                        order.ref, outcome: .succeeded(output: Data("{}".utf8)), worker: worker, now: h.now)
                }
                h.record(h.scheduler.lockReleased(UInt64(random.int(1...3)), by: worker, now: h.now))
                let after = try h.scheduler.childSnapshot(order.ref.group, path: order.ref.path)
                #expect(after.phase == before.phase && after.attempt == before.attempt)
            case 62..<65 where random.int(0...2) == 0:
                // A worker drains (a new one joins so there is room): nothing new may go to it.
                let ready = h.scheduler.membership.workers.values.filter { $0.state == .ready }.map(\.id).sorted()
                if let worker = ready.first { h.record(h.scheduler.workerDraining(worker, now: h.now)) }
                workerNumber += 1
                h.addWorker(workerNumber, slots: random.int(1...3), labels: randomLabels(&random))
            case 62..<65 where h.scheduler.membership.workers.count > 1:
                // A worker is lost, or leaves handing its attempts back.
                let victim = h.scheduler.membership.workers.keys.sorted()[0]
                for (id, entry) in h.running where entry.worker == victim {
                    h.running[id] = nil
                    late.append((victim, entry.order))
                }
                h.record(
                    h.scheduler.workerLost(
                        victim, reason: "random loss", handedBack: random.int(0...1) == 0, now: h.now))
                workerNumber += 1
                h.addWorker(workerNumber, slots: random.int(1...3), labels: randomLabels(&random))
            case 65..<75:
                h.now = h.now + .milliseconds(Int64(random.int(0...3000)))
                for worker in h.scheduler.membership.workers.keys { h.scheduler.workerHeard(worker, now: h.now) }
                h.record(h.scheduler.tick(now: h.now))
            default:
                // Drain: let every cancel land, then finish the oldest attempt successfully.
                try h.acknowledgeCancels()
                if let first = h.running.values.min(by: { $0.order.ref.id < $1.order.ref.id }) {
                    try h.finish(first.order, .succeeded(output: Data("{}".utf8)))
                } else {
                    h.now = h.now + .seconds(60)
                    for worker in h.scheduler.membership.workers.keys { h.scheduler.workerHeard(worker, now: h.now) }
                    h.record(h.scheduler.tick(now: h.now))
                }
            }
            try checker.check(&h, from: from)
            try #require(steps < 2000, "the groups never finished: \(h.runningPaths)")
        }
        #expect(h.running.isEmpty)
        #expect(h.scheduler.locks.isEmpty, "locks left: \(h.scheduler.lockSnapshot())")
        #expect(h.scheduler.attemptsInFlight == 0)
        #expect(h.scheduler.activeGroupCount == 0)
    }

    /// A random valid spec: nested groups, both modes, `after` and `inject` to earlier
    /// siblings, random categories from a small set, random failure policies and retries.
    private func randomSpec(_ random: inout SplitMix64, name: String) -> GroupSpec {
        var counter = 0
        func children(depth: Int) -> [ChildSpec] {
            var list: [ChildSpec] = []
            for _ in 0..<random.int(1...4) {
                counter += 1
                let childName = "c\(counter)"
                let earlier = list.map(\.name)
                let after = earlier.filter { _ in random.int(0...3) == 0 }
                let categories = ["a", "b", "c"].filter { _ in random.int(0...4) == 0 }
                if depth < 2, random.int(0...4) == 0 {
                    list.append(
                        ChildSpec(
                            childName, mode: random.int(0...1) == 0 ? .parallel : .sequence,
                            onChildFailure: ChildFailurePolicy.allCases[random.int(0...2)], after: after,
                            exclusive: categories, children: children(depth: depth + 1)))
                } else {
                    let producers = list.filter { !$0.isGroup }.map(\.name).filter { _ in random.int(0...4) == 0 }
                    list.append(
                        ChildSpec(
                            childName, run: "echo", after: after, exclusive: categories,
                            requires: [[], [], ["x"], ["y"]][random.int(0...3)],
                            retry: random.int(0...3) == 0 ? RetryPolicy(attempts: 2, backoff: .seconds(1)) : nil,
                            inject: producers.map {
                                Injection(from: $0, select: "n", into: JSONPath([.key("from_\($0)")]))
                            }))
                }
            }
            return list
        }
        return GroupSpec(
            name, mode: random.int(0...2) == 0 ? .sequence : .parallel,
            onChildFailure: ChildFailurePolicy.allCases[random.int(0...2)],
            exclusive: random.int(0...5) == 0 ? ["c"] : [], children: children(depth: 0))
    }
}

/// Checks the guarantees against what the harness saw.
struct InvariantChecker {
    let flats: [String: FlatSpec]
    var maxToken: [String: UInt64] = [:]
    var finishedAttempts = Set<UInt64>()

    init(flats: [String: FlatSpec]) { self.flats = flats }

    mutating func check(_ h: inout SchedulerHarness, from: Int) throws {
        // No two attempts that name a category run at the same time.
        var holders: [String: String] = [:]
        for entry in h.running.values {
            let leaf = try #require(flats[entry.order.ref.group]?.leaf(at: entry.order.ref.path))
            for category in leaf.exclusive {
                let name = "\(entry.order.ref.group)/\(entry.order.ref.path)"
                #expect(holders[category] == nil, "\(category) held by \(holders[category]!) and \(name)")
                holders[category] = name
            }
        }
        for action in h.log[from...] {
            switch action {
            case .dispatch(let worker, let order):
                #expect(
                    h.scheduler.membership.workers[worker]?.state == .ready,
                    "\(order.ref) dispatched to \(worker), not ready")
                let flat = try #require(flats[order.ref.group])
                let leaf = try #require(flat.leaf(at: order.ref.path))
                // Only to a worker with every label the child requires.
                let labels = Set(h.scheduler.membership.workers[worker]?.labels ?? [])
                #expect(
                    Set(leaf.requires).isSubset(of: labels),
                    "\(order.ref) needs \(leaf.requires), went to \(worker) with \(labels)")
                // Dependencies before dependents.
                for dependency in flat.dependencyPaths(of: leaf) {
                    let state = try h.scheduler.childSnapshot(order.ref.group, path: dependency).phase
                    #expect(state.isFinished, "\(order.ref) dispatched before \(dependency) finished (\(state))")
                }
                // Tokens strictly increase per category for the categories an attempt acquires.
                for category in leaf.acquires {
                    let token = try #require(
                        order.tokens[category], "\(order.ref) dispatched without a \(category) token")
                    #expect(token > maxToken[category, default: 0])
                    maxToken[category] = token
                }
            case .groupFinished(let group, _, _):
                // Only after every child.
                let snapshot = try h.scheduler.groupSnapshot(group)
                #expect(
                    snapshot.children.allSatisfy { $0.phase.isFinished }, "\(group) finished with unfinished children")
                #expect(!h.running.values.contains { $0.order.ref.group == group })
            default:
                break
            }
        }
    }
}

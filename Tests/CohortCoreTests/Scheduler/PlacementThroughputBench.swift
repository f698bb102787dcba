import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// Informative, off unless COHORT_BENCH is set: the scheduler's throughput (submit, place,
/// finish) for 4 groups of 5,000 children on 8 workers of 8 slots, all priority 0, and with
/// four priorities (the placement queues then insert by rank). Run with
/// `COHORT_BENCH=1 swift test --no-parallel --filter PlacementThroughputBench`.
@Suite struct PlacementThroughputBench {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["COHORT_BENCH"] != nil))
    func throughput() throws {
        for round in 0..<3 {
            var scheduler = Scheduler()
            var now = Timestamp.zero
            for worker in 1...8 {
                _ = scheduler.workerReady(
                    SessionID(UInt64(worker)), name: "w\(worker)", host: "h", labels: [], slots: 8,
                    kinds: ["echo"], now: now)
            }
            let children = (1...5000).map { ChildSpec("c\($0)", run: "echo") }
            var running: [(SessionID, DispatchOrder)] = []
            func collect(_ actions: [SchedulerAction]) {
                for case .dispatch(let worker, let order) in actions { running.append((worker, order)) }
            }
            let start = ContinuousClock.now
            for group in 0..<4 {
                let spec = GroupSpec("g\(group)", children: children)
                collect(try scheduler.submit(spec, now: now).actions)
            }
            var finished = 0
            while let (worker, order) = running.popLast() {
                now = now + .microseconds(10)
                collect(
                    try scheduler.attemptFinished(
                        order.ref, outcome: .succeeded(output: Data("{}".utf8)), worker: worker, now: now))
                finished += 1
            }
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print(
                "BENCH round \(round): \(finished) children in \(seconds) s = \(Int(Double(finished) / seconds)) children/s"
            )
            #expect(finished == 20_000)
        }
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["COHORT_BENCH"] != nil))
    func throughputWithPriorities() throws {
        for round in 0..<3 {
            var scheduler = Scheduler()
            var now = Timestamp.zero
            for worker in 1...8 {
                _ = scheduler.workerReady(
                    SessionID(UInt64(worker)), name: "w\(worker)", host: "h", labels: [], slots: 8,
                    kinds: ["echo"], now: now)
            }
            let children = (1...5000).map { ChildSpec("c\($0)", run: "echo") }
            var running: [(SessionID, DispatchOrder)] = []
            func collect(_ actions: [SchedulerAction]) {
                for case .dispatch(let worker, let order) in actions { running.append((worker, order)) }
            }
            let start = ContinuousClock.now
            for group in 0..<4 {
                var spec = GroupSpec("g\(group)", children: children)
                spec.priority = [0, 5, -3, 2][group]
                collect(try scheduler.submit(spec, now: now).actions)
            }
            var finished = 0
            while let (worker, order) = running.popLast() {
                now = now + .microseconds(10)
                collect(
                    try scheduler.attemptFinished(
                        order.ref, outcome: .succeeded(output: Data("{}".utf8)), worker: worker, now: now))
                finished += 1
            }
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print(
                "BENCH-PRIO round \(round): \(finished) children in \(seconds) s = \(Int(Double(finished) / seconds)) children/s"
            )
            #expect(finished == 20_000)
        }
    }
}

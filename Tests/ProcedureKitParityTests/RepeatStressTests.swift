import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitStressTests/RepeatStressTests.swift`.
@Suite("RepeatStressTests", .serialized)
struct RepeatStressTests {
    @Test func test__repeat_procedure_cancel() async throws {
        try await stress { batch, index in
            batch.enter()
            let repeatProcedure = RepeatProcedure(wait: .immediate) { _ in TestProcedure(delay: .seconds(1)) }
            repeatProcedure.name = "RepeatProcedure \(index)"
            repeatProcedure.addObserver(
                BlockObserver(didFinish: { _, outcome in
                    if !outcome.isCancelled { batch.incrementCounter(named: "not cancelled") }
                    batch.leave()
                }))
            batch.queue.add(repeatProcedure)
            repeatProcedure.cancel()
        } ended: { batch in
            #expect(batch.counter(named: "not cancelled") == 0)
        }
    }
}

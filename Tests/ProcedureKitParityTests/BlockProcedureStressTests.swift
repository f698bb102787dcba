import Testing

@testable import Procedures

/// ProcedureKit's `Tests/ProcedureKitStressTests/BlockProcedureStressTests.swift`, at its
/// level (10 batches of 5,000).
@Suite("BlockProcedureStressTests", .serialized)
struct BlockProcedureStressTests {
    /// ProcedureKit's `BlockProcedure { this in … }`: Cohort's block gets no procedure, so
    /// the work that waits for its own cancellation is a subclass.
    final class SpinsUntilCancelled: Procedure, @unchecked Sendable {
        // @unchecked Sendable: no stored properties of its own.
        override func execute() {
            // Keeps the procedure from finishing before it is cancelled.
            while !isCancelled {}
            finish()
        }
    }

    @Test func test__cancel_block_procedure() async throws {
        try await stress(batches: 10, batchSize: 5_000) { batch, _ in
            batch.enter()  // once for cancel
            batch.enter()  // once for finish
            let block = SpinsUntilCancelled()
            block.addObserver(
                BlockObserver(
                    didCancel: { _, _ in batch.leave() },
                    didFinish: { _, _ in batch.leave() }))
            batch.queue.add(block)
            block.cancel()
        }
    }

    @Test func test_cancel_or_finish_block_procedure() async throws {
        try await stress(batches: 10, batchSize: 5_000) { batch, _ in
            batch.enter()
            let block = BlockProcedure {}
            block.addObserver(BlockObserver(didFinish: { _, _ in batch.leave() }))
            batch.queue.add(block)
            block.cancel()
        }
    }
}

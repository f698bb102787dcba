import CohortTestSupport
import Testing

@testable import Procedures

@Suite("Map, reduce and batch")
struct CollectionProcedureTests {
    @Test func mapTransformsEachElement() async throws {
        let queue = makeQueue()
        let map = MapProcedure<Int, [String]>(input: [1, 2, 3]) { "#\($0)" }
        #expect(try await queue.run(map) == ["#1", "#2", "#3"])
    }

    @Test func mapThatThrowsFails() async throws {
        let queue = makeQueue()
        let map = MapProcedure<Int, [Int]>(input: [1, 2, 3]) { value in
            if value == 2 { throw TestError("two") }
            return value
        }
        await #expect(throws: TestError("two")) { try await queue.run(map) }
    }

    @Test func reduceFoldsTheInput() async throws {
        let queue = makeQueue()
        let reduce = ReduceProcedure<Int, Int>(input: [1, 2, 3, 4], initial: 10) { $0 + $1 }
        #expect(try await queue.run(reduce) == 20)
    }

    @Test func mapAndReduceTakeInjectedInputs() async throws {
        let queue = makeQueue()
        let numbers = ResultProcedure { [1, 2, 3] }
        let squares = MapProcedure<Int, [Int]> { $0 * $0 }.injectResult(from: numbers)
        let sum = ReduceProcedure<Int, Int>(initial: 0) { $0 + $1 }.injectResult(from: squares)
        queue.add([numbers, squares])
        #expect(try await queue.run(sum) == 14)
    }

    @Test func batchRunsOneProcedurePerElementAndKeepsTheirOrder() async throws {
        let queue = makeQueue()
        let made = Locked(0)
        let batch = BatchProcedure<AsyncTransformProcedure<Int, Int>>(input: [5, 4, 3, 2, 1]) { _ in
            made.mutate { $0 += 1 }
            return AsyncTransformProcedure { value in
                try await Task.sleep(for: .milliseconds(value))
                return value * 10
            }
        }
        #expect(try await queue.run(batch) == [50, 40, 30, 20, 10])
        #expect(made.value == 5)
        #expect(batch.children.count == 5)
    }

    @Test func batchTakesAnInjectedInput() async throws {
        let queue = makeQueue()
        let producer = ResultProcedure { [1, 2] }
        let batch = BatchProcedure<TransformProcedure<Int, String>> { _ in TransformProcedure { "\($0)" } }
            .injectResult(from: producer)
        queue.add(producer)
        #expect(try await queue.run(batch) == ["1", "2"])
    }

    @Test func batchIsCancelledIfItsInputIsNotReady() async throws {
        let queue = makeQueue()
        let made = Locked(0)
        let batch = BatchProcedure<TransformProcedure<Int, Int>> { _ in
            made.mutate { $0 += 1 }
            return TransformProcedure { $0 }
        }
        queue.add(batch)
        let outcome = try await finished(batch)
        #expect(outcome.isCancelled)
        #expect(outcome.procedureError?.code == .requirementNotSatisfied)
        #expect(made.value == 0)
    }

    @Test func batchWithAFailingItemFails() async throws {
        let queue = makeQueue()
        let batch = BatchProcedure<TransformProcedure<Int, Int>>(input: [1, 2, 3]) { _ in
            TransformProcedure { value in
                if value == 2 { throw TestError("item") }
                return value
            }
        }
        queue.add(batch)
        let outcome = try await finished(batch)
        #expect(outcome.isFailed)
        #expect(batch.output.failure is GroupError)
    }

    @Test func emptyBatchOutputsAnEmptyArray() async throws {
        let queue = makeQueue()
        let batch = BatchProcedure<TransformProcedure<Int, Int>>(input: []) { _ in TransformProcedure { $0 } }
        #expect(try await queue.run(batch) == [])
    }
}

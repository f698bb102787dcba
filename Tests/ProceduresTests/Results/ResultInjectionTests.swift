import CohortTestSupport
import Testing

@testable import Procedures

@Suite("Result injection")
struct ResultInjectionTests {
    @Test func pendingHoldsAValueOnceReady() {
        let pending = Pending<Int>.pending
        #expect(pending.isPending)
        #expect(pending.value == nil)
        let ready = Pending(5)
        #expect(!ready.isPending)
        #expect(ready.value == 5)
        #expect(Pending<Int>(nil).isPending)
    }

    @Test func pendingResultOffersSuccessAndFailure() {
        let success: Pending<ProcedureResult<Int>> = .ready(.success(1))
        #expect(success.success == 1)
        #expect(success.failure == nil)
        let failure: Pending<ProcedureResult<Int>> = .ready(.failure(TestError("f")))
        #expect(failure.success == nil)
        #expect(failure.failure as? TestError == TestError("f"))
        let pending: Pending<ProcedureResult<Int>> = .pending
        #expect(pending.success == nil && pending.failure == nil)
    }

    @Test func outcomeDescribesItself() {
        #expect(ProcedureOutcome.succeeded.description == "succeeded")
        #expect(ProcedureOutcome.failed(TestError("x")).description == "failed: TestError(x)")
        #expect(ProcedureOutcome.cancelled(nil).description == "cancelled")
        #expect(ProcedureOutcome.cancelled(TestError("y")).description == "cancelled: TestError(y)")
    }

    @Test func injectResultPassesTheOutputAsInput() async throws {
        let queue = makeQueue()
        let producer = ResultProcedure { 20 }
        let consumer = TransformProcedure<Int, Int> { $0 * 2 }.injectResult(from: producer)
        queue.add([consumer, producer])
        #expect(try await finished(consumer).isSucceeded)
        #expect(consumer.input.value == 20)
        #expect(consumer.output.success == 40)
        #expect(consumer.dependencies == [producer])
    }

    @Test func injectResultViaATransformPassesTheTransformedOutput() async throws {
        let queue = makeQueue()
        struct Car: Sendable { let speed: Int }
        let car = ResultProcedure { Car(speed: 88) }
        let consumer = TransformProcedure<Int, String> { "\($0) mph" }.injectResult(from: car) { $0.speed }
        queue.add(car)
        #expect(try await queue.run(consumer) == "88 mph")
    }

    @Test func throwingInjectionTransformCancelsTheConsumerWithTheError() async throws {
        let queue = makeQueue()
        let ran = Locked(false)
        let producer = ResultProcedure { 1 }
        let consumer = TransformProcedure<Int, Int> {
            ran.value = true
            return $0
        }
        .injectResult(from: producer) { (_: Int) -> Int in throw TestError("bad value") }
        queue.add([producer, consumer])
        let outcome = try await finished(consumer)
        #expect(outcome.isCancelled)
        #expect(outcome.error as? TestError == TestError("bad value"))
        #expect(!ran.value)
    }

    @Test func failedProducerCancelsTheConsumerWithAnErrorNamingIt() async throws {
        let queue = makeQueue()
        let transformRan = Locked(false)
        let injectionRan = Locked(false)
        let producer = ResultProcedure<Int> { throw TestError("down") }
        producer.name = "fetch-price"
        let consumer = TransformProcedure<Int, Int> {
            transformRan.value = true
            return $0
        }
        .injectResult(from: producer) { value in
            injectionRan.value = true
            return value
        }
        queue.add([producer, consumer])
        let outcome = try await finished(consumer)
        #expect(outcome.isCancelled)
        #expect(outcome.procedureError?.code == .requirementNotSatisfied)
        #expect(outcome.procedureError?.message.contains("fetch-price") == true)
        #expect(!transformRan.value)
        #expect(!injectionRan.value)
        #expect(consumer.input.isPending)
    }

    @Test func cancelledProducerCancelsTheConsumerWithAnErrorNamingIt() async throws {
        let queue = makeQueue()
        let transformRan = Locked(false)
        let producer = ResultProcedure { 1 }
        producer.name = "fetch-price"
        producer.cancel()
        let consumer = TransformProcedure<Int, Int> {
            transformRan.value = true
            return $0
        }.injectResult(from: producer)
        queue.add([producer, consumer])
        let outcome = try await finished(consumer)
        #expect(outcome.isCancelled)
        #expect(outcome.procedureError?.code == .requirementNotSatisfied)
        #expect(outcome.procedureError?.message.contains("fetch-price") == true)
        #expect(!transformRan.value)
    }

    /// A producer that succeeds without setting its output does not meet the requirement.
    final class SilentProducer: Procedure, OutputProcedure, @unchecked Sendable {
        // @unchecked Sendable: adds only immutable `let`s of Sendable or locked values; the rest is the engine's.
        var output: Pending<ProcedureResult<Int>> {
            get { .pending }
            set {}
        }
    }

    @Test func producerWithoutAnOutputCancelsTheConsumer() async throws {
        let queue = makeQueue()
        let producer = SilentProducer()
        let consumer = TransformProcedure<Int, Int> { $0 }.injectResult(from: producer)
        queue.add([producer, consumer])
        let outcome = try await finished(consumer)
        #expect(outcome.procedureError?.code == .requirementNotSatisfied)
        #expect(outcome.procedureError?.message.contains("without an output") == true)
    }

    @Test func optionalOutputUnwrapsIntoANonOptionalInput() async throws {
        let queue = makeQueue()
        let producer = ResultProcedure<Int?> { 3 }
        let consumer = TransformProcedure<Int, Int> { $0 + 1 }.injectResult(from: producer)
        queue.add(producer)
        #expect(try await queue.run(consumer) == 4)
    }

    @Test func nilOptionalOutputCancelsTheConsumerWithAnErrorNamingTheProducer() async throws {
        let queue = makeQueue()
        let ran = Locked(false)
        let producer = ResultProcedure<Int?> { nil }
        producer.name = "lookup"
        let consumer = TransformProcedure<Int, Int> {
            ran.value = true
            return $0
        }.injectResult(from: producer)
        queue.add([producer, consumer])
        let outcome = try await finished(consumer)
        #expect(outcome.isCancelled)
        #expect(outcome.procedureError?.code == .requirementNotSatisfied)
        #expect(outcome.procedureError?.message.contains("lookup") == true)
        #expect(!ran.value)
    }

    @Test func injectResultsGathersOutputsInOrder() async throws {
        let queue = makeQueue()
        let producers = (0..<5).map { index in
            AsyncResultProcedure<Int> {
                try await Task.sleep(for: .milliseconds(5 - index))
                return index * 10
            }
        }
        let consumer = TransformProcedure<[Int], [Int]> { $0 }.injectResults(from: producers)
        queue.add(producers)
        #expect(try await queue.run(consumer) == [0, 10, 20, 30, 40])
        #expect(Set(consumer.dependencies) == Set(producers))
    }

    @Test func injectResultsCancelsTheConsumerIfAnyProducerFailed() async throws {
        let queue = makeQueue()
        let ran = Locked(false)
        let good = ResultProcedure { 1 }
        let bad = ResultProcedure<Int> { throw TestError() }
        bad.name = "bad-producer"
        let consumer = TransformProcedure<[Int], Int> {
            ran.value = true
            return $0.count
        }.injectResults(from: [good, bad])
        queue.add([good, bad, consumer])
        let outcome = try await finished(consumer)
        #expect(outcome.procedureError?.message.contains("bad-producer") == true)
        #expect(!ran.value)
    }

    @Test func injectionChainsThroughSeveralProcedures() async throws {
        let queue = makeQueue()
        let start = ResultProcedure { 2 }
        let square = TransformProcedure<Int, Int> { $0 * $0 }.injectResult(from: start)
        let describe = AsyncTransformProcedure<Int, String> { "value \($0)" }.injectResult(from: square)
        queue.add([square, start])
        #expect(try await queue.run(describe) == "value 4")
    }

    @Test func injectionWorksAcrossAGroupBoundary() async throws {
        let queue = makeQueue()
        let producer = ResultProcedure { 9 }
        let consumer = TransformProcedure<Int, Int> { $0 + 1 }.injectResult(from: producer)
        let group = GroupProcedure(producer, consumer)
        queue.add(group)
        #expect(try await finished(group).isSucceeded)
        #expect(consumer.output.success == 10)
    }
}

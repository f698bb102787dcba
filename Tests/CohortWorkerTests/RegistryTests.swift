import CohortPeerSupport
import CohortSpec
import CohortTestSupport
import CohortWire
import Foundation
import Testing

@testable import CohortWorker

struct Text: Codable {
    var text: String
}

struct Counts: Codable, Equatable {
    var words: Int
    var characters: Int
}

@Suite(.timeLimit(.minutes(1)))
struct RegistryTests {
    static let wordcount: ProcedureRegistry = {
        var registry = ProcedureRegistry()
        registry.register("wordcount") { (input: Text, context: ProcedureContext) async throws -> Counts in
            Counts(words: input.text.split(whereSeparator: \.isWhitespace).count, characters: input.text.count)
        }
        return registry
    }()

    @Test func builtinsAreRegisteredByDefault() {
        #expect(ProcedureRegistry().kindNames == ["echo", "fail", "shell", "sleep"])
        #expect(ProcedureRegistry.empty.kindNames.isEmpty)
        #expect(Self.wordcount.contains("wordcount"))
    }

    @Test func codableKindDecodesItsInputAndEncodesItsOutput() async throws {
        try await WorkerHarness.run(registry: Self.wordcount) { harness async throws in
            #expect(harness.ready.kinds.contains("wordcount"))
            harness.dispatch("wordcount", #"{"text":"the quick brown fox"}"#, id: 1)
            #expect(try await harness.output(1) == ["words": 4, "characters": 19])
        }
    }

    @Test func codableKindWithBadInputFailsNamingTheField() async throws {
        try await WorkerHarness.run(registry: Self.wordcount) { harness async throws in
            harness.dispatch("wordcount", #"{"txt":"hello"}"#, id: 1)
            harness.dispatch("wordcount", #"{"text":42}"#, id: 2)
            #expect(try await harness.coordinator.result(1).outcome == .failed(error: "with.text: missing"))
            #expect(try await harness.coordinator.result(2).outcome == .failed(error: "with.text: expected a string"))
        }
    }

    @Test func jsonValueKindSeesItsContext() async throws {
        var registry = ProcedureRegistry()
        registry.register("whoami") { (_: JSONValue, context: ProcedureContext) -> JSONValue in
            [
                "group": .string(context.group), "child": .string(context.child),
                "attempt": .int(Int64(context.attempt)),
                "worker": .string(context.workerName), "fence": .int(Int64(context.fencingTokens["db"] ?? 0)),
                "env": .string(context.environment["COHORT_FENCE_DB"] ?? ""),
            ]
        }
        try await WorkerHarness.run(registry: registry) { harness async throws in
            harness.dispatch("whoami", "{}", id: 3, path: "a/b", attempt: 2, fencingTokens: ["db": 9])
            #expect(
                try await harness.output(3) == [
                    "group": "g-1", "child": "a/b", "attempt": 2, "worker": "test-worker", "fence": 9, "env": "9",
                ])
        }
    }

    @Test func thrownErrorFailsTheAttemptWithItsDescription() async throws {
        var registry = ProcedureRegistry()
        registry.register("broken") { (_: JSONValue, _: ProcedureContext) -> JSONValue in
            throw ProcedureFailure("the printer is on fire")
        }
        try await WorkerHarness.run(registry: registry) { harness async throws in
            harness.dispatch("broken", "{}", id: 1)
            #expect(try await harness.coordinator.result(1).outcome == .failed(error: "the printer is on fire"))
        }
    }

    @Test func cancellingAnAttemptCancelsItsKindsTaskAndLocalProcedures() async throws {
        let observed = Locked((sawCancel: false, childOutcome: ""))
        var registry = ProcedureRegistry()
        registry.register("patient") { (_: JSONValue, context: ProcedureContext) -> JSONValue in
            let child = AsyncBlockProcedure { try await Task.sleep(for: .seconds(60)) }
            child.whenFinished { outcome in observed.mutate { $0.childOutcome = "\(outcome)" } }
            do {
                try await context.run(child)
            } catch {
                observed.mutate { $0.sawCancel = context.isCancelled && context.cancellationReason == "stop it" }
                throw error
            }
            return nil
        }
        try await WorkerHarness.run(registry: registry) { harness async throws in
            let task = harness.dispatch("patient", "{}", id: 1)
            _ = try await harness.coordinator.workerMessage("started") {
                if case .started(let s) = $0 { s } else { nil }
            }
            harness.coordinator.send(.cancel([AttemptCancellation(ref: task, reason: "stop it")]))
            #expect(try await harness.coordinator.result(1).outcome == .cancelled(reason: "stop it"))
            #expect(observed.value.sawCancel)
            #expect(observed.value.childOutcome.hasPrefix("cancelled"))
        }
    }

    @Test func kindCanBeCalledDirectlyWithALocalContext() async throws {
        let context = ProcedureContext(group: "g", child: "c", attempt: 1)
        let output = try await Builtins.sleep(Data(#"{"seconds":0}"#.utf8), context)
        #expect(try JSONValue(jsonData: output) == ["seconds": 0])
        #expect(context.environment["COHORT_CHILD"] == "c")
    }
}

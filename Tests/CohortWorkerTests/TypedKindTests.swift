import CohortSpec
import Testing

@testable import CohortWorker

private struct Phrase: Codable, Sendable { var text: String }
private struct WordTally: Codable, Sendable, Equatable { var words: Int }

private let wordcount = Kind<Phrase, WordTally>("wordcount")
private let whoami = Kind<Phrase, String>("whoami")

@Suite struct TypedKindTests {
    @Test func aTypedKindRunsWithOrWithoutItsContext() async throws {
        var registry = ProcedureRegistry.empty
        registry.register(wordcount) { input in WordTally(words: input.text.split(separator: " ").count) }
        registry.register(whoami) { input, context in "\(input.text) \(context.group)/\(context.child)" }
        #expect(registry.kindNames == ["whoami", "wordcount"])
        #expect(try await registry.run(wordcount, Phrase(text: "a b c")) == WordTally(words: 3))
        let context = ProcedureContext(group: "g-1", child: "me")
        #expect(try await registry.run(whoami, Phrase(text: "I am"), context: context) == "I am g-1/me")
    }

    @Test func anInputOfTheWrongShapeFailsNamingTheField() async throws {
        var registry = ProcedureRegistry.empty
        registry.register(wordcount) { input in WordTally(words: input.text.count) }
        let other = Kind<WordTally, WordTally>("wordcount")  // same name, another input type
        await #expect(throws: ProcedureInputError(field: "with.text", message: "missing")) {
            try await registry.run(other, WordTally(words: 1))
        }
        await #expect(throws: ProcedureRegistryError.self) {
            try await ProcedureRegistry.empty.run(wordcount, Phrase(text: "a"))
        }
    }
}

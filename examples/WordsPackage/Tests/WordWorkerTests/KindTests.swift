import CohortWorker
import Testing
import WordKinds
import WordWorker

@Test func wordcountCountsWordsAndCharacters() async throws {
    var registry = ProcedureRegistry.empty
    registry.registerWordKinds()
    let counts = try await registry.run(wordcount, Text(text: "a bb ccc"))
    #expect(counts == Counts(words: 3, characters: 8))
}

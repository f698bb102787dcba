import CohortWorker
import WordKinds

extension ProcedureRegistry {
    /// Adds the word kinds to this registry.
    public mutating func registerWordKinds() {
        register(wordcount) { input in
            Counts(words: input.text.split(whereSeparator: \.isWhitespace).count, characters: input.text.count)
        }
        register(sum) { input, context in
            context.logger.info("adding \(input.words.count) counts")
            return input.words.reduce(0, +)
        }
    }
}

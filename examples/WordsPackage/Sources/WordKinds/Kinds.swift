import CohortSpec

public struct Text: Codable, Sendable {
    public var text: String
    public init(text: String) { self.text = text }
}

public struct Counts: Codable, Sendable, Equatable {
    public var words: Int
    public var characters: Int
    public init(words: Int, characters: Int) {
        self.words = words
        self.characters = characters
    }
}

public struct Total: Codable, Sendable, Equatable {
    public var words: [Int]
    public init(words: [Int]) { self.words = words }
}

/// Counts the words and characters of a text.
public let wordcount = Kind<Text, Counts>("wordcount")
/// Adds up word counts, injected from `wordcount` children.
public let sum = Kind<Total, Int>("sum")

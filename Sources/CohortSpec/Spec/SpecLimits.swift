/// Size limits a spec must stay within, so a submission cannot exhaust the coordinator.
/// Each error for an exceeded limit names the limit's property.
public struct SpecLimits: Sendable, Hashable, Codable {
    /// The largest spec text, in bytes. Default 1 MiB.
    public var maxSpecBytes: Int
    /// The most children in one group. Default 10,000.
    public var maxChildrenPerGroup: Int
    /// The most procedures in the whole spec, all levels. Default 100,000.
    public var maxTotalChildren: Int
    /// How deep groups may nest: a group directly inside the top-level group is at depth 1, a
    /// group inside that at depth 2, and so on. Default 32.
    public var maxNestingDepth: Int
    /// How deep YAML/JSON values may nest anywhere in the text (`with` included). Default 256
    /// (each level of group nesting takes three: child, `group`, `children`).
    public var maxDocumentDepth: Int
    /// The most values the YAML may expand to, aliases expanded (guards against alias bombs).
    /// Default 1,000,000.
    public var maxNodes: Int
    /// The most attempts a `retry` may ask for. Default 100.
    public var maxRetryAttempts: Int
    /// The longest child name, exclusive category or label, in characters. Default 128.
    public var maxNameLength: Int

    public init(
        maxSpecBytes: Int = 1 << 20,
        maxChildrenPerGroup: Int = 10_000,
        maxTotalChildren: Int = 100_000,
        maxNestingDepth: Int = 32,
        maxDocumentDepth: Int = 256,
        maxNodes: Int = 1_000_000,
        maxRetryAttempts: Int = 100,
        maxNameLength: Int = 128
    ) {
        self.maxSpecBytes = maxSpecBytes
        self.maxChildrenPerGroup = maxChildrenPerGroup
        self.maxTotalChildren = maxTotalChildren
        self.maxNestingDepth = maxNestingDepth
        self.maxDocumentDepth = maxDocumentDepth
        self.maxNodes = maxNodes
        self.maxRetryAttempts = maxRetryAttempts
        self.maxNameLength = maxNameLength
    }

    public static let `default` = SpecLimits()
}

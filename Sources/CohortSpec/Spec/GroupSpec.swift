/// How a group orders its children.
public enum GroupMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// A DAG: children start as soon as what they wait for (`after`, `inject`) has finished.
    case parallel
    /// A cascade: each child waits for the one listed before it.
    case sequence
}

/// What a group does when one of its children fails (or is cancelled on its own).
public enum ChildFailurePolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Cancel the children that wait on the failed one, directly or not; the others carry on.
    case cancelDependents = "cancel-dependents"
    /// Cancel every child that has not finished.
    case cancelGroup = "cancel-group"
    /// Cancel nothing; even dependents run. The group still finishes `failed`.
    case `continue` = "continue"
}

/// What happens to a procedure whose attempt was running on a worker that was lost (killed,
/// silent past its liveness, cut off): run it again elsewhere, on a budget of its own
/// (the coordinator's `maxWorkerLosses`, 3 by default) that does not use up `retry.attempts`,
/// or fail at once. A re-run may repeat what the lost attempt already did: see
/// docs/scheduling.md, "Worker loss".
public enum WorkerLossPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Run it again on another worker (the default).
    case retry
    /// Fail the procedure, naming the lost worker.
    case fail
}

/// A group procedure as submitted: the top level of a spec.
///
/// Build one in Swift with the initialisers, or parse one with `SpecParser`. A value built in
/// code is not checked until `validate(limits:)` (the coordinator validates every submission).
/// Encodes to, and decodes from, the spec's own JSON form (`specJSON`), so the coordinator can
/// journal it and a client can send it.
public struct GroupSpec: Sendable, Hashable {
    /// Shown in `cohort status`; defaults to the spec file's base name.
    public var name: String
    public var mode: GroupMode
    /// Deadline for the whole group, from its start; `nil` for none.
    public var timeout: Duration?
    public var onChildFailure: ChildFailurePolicy
    /// Mutual-exclusion categories held from the group's first child's start until it finishes.
    public var exclusive: [String]
    /// Worker labels every child of the group needs.
    public var requires: [String]
    /// Counting locks: category → how many holders it may have at once (1…10,000). A
    /// category not listed has limit 1 (an exclusive lock) unless the coordinator's
    /// configuration or another unfinished group sets one (docs/spec.md, "Counting locks").
    public var limits: [String: Int] = [:]
    /// When slots or locks are scarce, ready children of higher-priority groups go first
    /// (-1000…1000, default 0); a waiting child gains one level per aging interval, so
    /// nothing waits for ever (docs/spec.md, "Priorities").
    public var priority: Int = 0
    public var children: [ChildSpec]

    public init(
        _ name: String,
        mode: GroupMode = .parallel,
        timeout: Duration? = nil,
        onChildFailure: ChildFailurePolicy = .cancelDependents,
        exclusive: [String] = [],
        requires: [String] = [],
        children: [ChildSpec]
    ) {
        self.name = name
        self.mode = mode
        self.timeout = timeout
        self.onChildFailure = onChildFailure
        self.exclusive = exclusive
        self.requires = requires
        self.children = children
    }

    /// Builds a group with a list of children written as statements, with `if`, `for` and
    /// `try` among them:
    /// ```swift
    /// try GroupSpec("release", timeout: .seconds(600)) {
    ///     ChildSpec("version", run: "echo", with: ["value": "1.2.3"])
    ///     for target in targets {
    ///         ChildSpec("build-\(target)", run: "shell", with: ["command": ["make", .string(target)]], after: ["version"])
    ///     }
    ///     if signed { try ChildSpec("sign", sign, Artifacts(targets: targets), after: targets.map { "build-\($0)" }) }
    /// }
    /// ```
    /// - Throws: what `children` throws (a typed child's input that does not encode).
    public init(
        _ name: String,
        mode: GroupMode = .parallel,
        timeout: Duration? = nil,
        onChildFailure: ChildFailurePolicy = .cancelDependents,
        exclusive: [String] = [],
        requires: [String] = [],
        @ChildrenBuilder children: () throws -> [ChildSpec]
    ) rethrows {
        self.init(
            name, mode: mode, timeout: timeout, onChildFailure: onChildFailure, exclusive: exclusive,
            requires: requires, children: try children())
    }
}

extension GroupSpec {
    /// The values a category's limit may take (`limits`).
    public static let lockLimitRange = 1...10_000
    /// The values `priority` may take.
    public static let priorityRange = -1000...1000
}

/// Collects `ChildSpec` statements, with `if`, `for` and optionals, into a list.
@resultBuilder
public enum ChildrenBuilder {
    public static func buildExpression(_ child: ChildSpec) -> [ChildSpec] { [child] }
    public static func buildExpression(_ children: [ChildSpec]) -> [ChildSpec] { children }
    public static func buildBlock(_ parts: [ChildSpec]...) -> [ChildSpec] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [ChildSpec]?) -> [ChildSpec] { part ?? [] }
    public static func buildEither(first part: [ChildSpec]) -> [ChildSpec] { part }
    public static func buildEither(second part: [ChildSpec]) -> [ChildSpec] { part }
    public static func buildArray(_ parts: [[ChildSpec]]) -> [ChildSpec] { parts.flatMap { $0 } }
    public static func buildLimitedAvailability(_ part: [ChildSpec]) -> [ChildSpec] { part }
}

/// One child of a group: a procedure to run, or a nested group.
///
/// `after`, `exclusive`, `requires` and `timeout` mean the same for both; `retry` and `inject`
/// apply to procedures only (validation rejects them on a group).
public struct ChildSpec: Sendable, Hashable {
    /// What the child is.
    public enum Body: Sendable, Hashable {
        case procedure(Procedure)
        case group(Group)
    }

    /// A procedure: a kind a worker knows (`shell`, `sleep`, `echo`, `fail`, or a custom one)
    /// and its input.
    public struct Procedure: Sendable, Hashable {
        /// The procedure kind, the spec's `run`.
        public var run: String
        /// The input, the spec's `with`; injections write into it. Defaults to `{}`.
        public var with: JSONValue

        public init(run: String, with: JSONValue = .emptyObject) {
            self.run = run
            self.with = with
        }
    }

    /// A nested group, the spec's `group:` mapping.
    public struct Group: Sendable, Hashable {
        public var mode: GroupMode
        public var onChildFailure: ChildFailurePolicy
        public var children: [ChildSpec]

        public init(
            mode: GroupMode = .parallel, onChildFailure: ChildFailurePolicy = .cancelDependents,
            children: [ChildSpec]
        ) {
            self.mode = mode
            self.onChildFailure = onChildFailure
            self.children = children
        }
    }

    /// Unique among siblings, no `/`; the last part of the child's path (`tests/unit`).
    public var name: String
    public var body: Body
    /// Siblings (or siblings of an enclosing group) that must finish first.
    public var after: [String]
    /// Mutual-exclusion categories; for a group, held by the group for all its children.
    public var exclusive: [String]
    /// Worker labels needed; for a group, by all its children.
    public var requires: [String]
    /// Deadline from the child's start (for a procedure, per attempt); `nil` for none.
    public var timeout: Duration?
    public var retry: RetryPolicy?
    /// What a lost worker does to a running attempt: run it again (the default) or fail.
    /// Procedures only.
    public var onWorkerLoss: WorkerLossPolicy
    /// Results of other children written into this one's input; each implies `after`.
    public var inject: [Injection]
    /// Fan-out at submission: one procedure per combination (procedures only; see ``Matrix``).
    public var matrix: Matrix?
    /// What this nested group was expanded from, if the coordinator made it from a `matrix`
    /// child; `nil` for everything written by hand. Not part of the document.
    public internal(set) var fanOut: FanOut?

    public init(
        name: String,
        body: Body,
        after: [String] = [],
        exclusive: [String] = [],
        requires: [String] = [],
        timeout: Duration? = nil,
        retry: RetryPolicy? = nil,
        onWorkerLoss: WorkerLossPolicy = .retry,
        inject: [Injection] = [],
        matrix: Matrix? = nil
    ) {
        self.name = name
        self.body = body
        self.after = after
        self.exclusive = exclusive
        self.requires = requires
        self.timeout = timeout
        self.retry = retry
        self.onWorkerLoss = onWorkerLoss
        self.inject = inject
        self.matrix = matrix
    }

    /// A procedure child: `ChildSpec("build", run: "shell", with: ["command": ["make"]], after: ["checkout"])`.
    public init(
        _ name: String,
        run: String,
        with input: JSONValue = .emptyObject,
        after: [String] = [],
        exclusive: [String] = [],
        requires: [String] = [],
        timeout: Duration? = nil,
        retry: RetryPolicy? = nil,
        onWorkerLoss: WorkerLossPolicy = .retry,
        inject: [Injection] = [],
        matrix: Matrix? = nil
    ) {
        self.init(
            name: name, body: .procedure(Procedure(run: run, with: input)), after: after, exclusive: exclusive,
            requires: requires, timeout: timeout, retry: retry, onWorkerLoss: onWorkerLoss, inject: inject,
            matrix: matrix)
    }

    /// A nested group child with a list of children.
    public init(
        _ name: String,
        mode: GroupMode = .parallel,
        onChildFailure: ChildFailurePolicy = .cancelDependents,
        after: [String] = [],
        exclusive: [String] = [],
        requires: [String] = [],
        timeout: Duration? = nil,
        children: [ChildSpec]
    ) {
        self.init(
            name: name, body: .group(Group(mode: mode, onChildFailure: onChildFailure, children: children)),
            after: after, exclusive: exclusive, requires: requires, timeout: timeout)
    }

    /// A nested group child, its children written as statements (`if`, `for` and `try` allowed).
    /// - Throws: what `children` throws.
    public init(
        _ name: String,
        mode: GroupMode = .parallel,
        onChildFailure: ChildFailurePolicy = .cancelDependents,
        after: [String] = [],
        exclusive: [String] = [],
        requires: [String] = [],
        timeout: Duration? = nil,
        @ChildrenBuilder children: () throws -> [ChildSpec]
    ) rethrows {
        self.init(
            name, mode: mode, onChildFailure: onChildFailure, after: after, exclusive: exclusive,
            requires: requires, timeout: timeout, children: try children())
    }
}

extension ChildSpec {
    public var isGroup: Bool {
        if case .group = body { return true }
        return false
    }

    /// The procedure kind, or `nil` for a group.
    public var run: String? {
        if case .procedure(let procedure) = body { return procedure.run }
        return nil
    }

    /// The procedure input, or `nil` for a group.
    public var input: JSONValue? {
        if case .procedure(let procedure) = body { return procedure.with }
        return nil
    }

    /// The nested group's children; empty for a procedure.
    public var children: [ChildSpec] {
        if case .group(let group) = body { return group.children }
        return []
    }

    /// Every sibling name this child waits for: `after`, then each `inject.from` (in order, once each).
    public var dependencyNames: [String] {
        var seen = Set<String>()
        return (after + inject.map(\.from)).filter { seen.insert($0).inserted }
    }
}

/// How a nested group came from a fan-out.
public enum FanOut: String, Sendable, Hashable {
    /// A child's `matrix`, expanded at submission.
    case matrix
}

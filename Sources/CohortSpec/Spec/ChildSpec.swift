/// One child of a group: a procedure to run, or a nested group.
///
/// `after`, `exclusive`, `requires`, `timeout`, `condition` (`if:`) and `requirement`
/// (`require:`) mean the same for both; `retry`, `inject` and `repeating` (`repeat:`) apply to
/// procedures only (validation rejects them on a group).
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
    /// The spec's `if:`: evaluated once the child's dependencies have finished, before it asks
    /// for any lock; false, the child does not run and ends `skipped`. A child with a condition
    /// is not cancelled when a dependency fails or is cancelled (the condition decides), and
    /// not skipped when one is skipped. Names it uses are dependencies, like `after`.
    public var condition: SpecExpression?
    /// The spec's `require:`: evaluated after `condition`; false, the child fails with the
    /// expression in its error. Names it uses are dependencies, like `after`.
    public var requirement: SpecExpression?
    /// The spec's `repeat:` (procedures only): run again until `until` is true, at most `max` runs.
    public var repeating: RepeatPolicy?
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
        condition: SpecExpression? = nil,
        requirement: SpecExpression? = nil,
        repeating: RepeatPolicy? = nil,
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
        self.condition = condition
        self.requirement = requirement
        self.repeating = repeating
        self.matrix = matrix
    }

    /// A procedure child: `ChildSpec("build", run: "shell", with: ["command": ["make"]], after: ["checkout"])`.
    ///
    /// `condition` is the spec's `if:`, `requirement` its `require:` and `repeating` its
    /// `repeat:` (`if` and `repeat` are Swift keywords):
    /// `ChildSpec("cleanup", run: "shell", with: …, condition: "failed(deploy)")`.
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
        condition: SpecExpression? = nil,
        requirement: SpecExpression? = nil,
        repeating: RepeatPolicy? = nil,
        matrix: Matrix? = nil
    ) {
        self.init(
            name: name, body: .procedure(Procedure(run: run, with: input)), after: after, exclusive: exclusive,
            requires: requires, timeout: timeout, retry: retry, onWorkerLoss: onWorkerLoss, inject: inject,
            condition: condition, requirement: requirement, repeating: repeating,
            matrix: matrix)
    }

    /// A nested group child with a list of children; `condition` is its `if:`, `requirement`
    /// its `require:`.
    public init(
        _ name: String,
        mode: GroupMode = .parallel,
        onChildFailure: ChildFailurePolicy = .cancelDependents,
        after: [String] = [],
        exclusive: [String] = [],
        requires: [String] = [],
        timeout: Duration? = nil,
        condition: SpecExpression? = nil,
        requirement: SpecExpression? = nil,
        children: [ChildSpec]
    ) {
        self.init(
            name: name, body: .group(Group(mode: mode, onChildFailure: onChildFailure, children: children)),
            after: after, exclusive: exclusive, requires: requires, timeout: timeout, condition: condition,
            requirement: requirement)
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
        condition: SpecExpression? = nil,
        requirement: SpecExpression? = nil,
        @ChildrenBuilder children: () throws -> [ChildSpec]
    ) rethrows {
        self.init(
            name, mode: mode, onChildFailure: onChildFailure, after: after, exclusive: exclusive,
            requires: requires, timeout: timeout, condition: condition, requirement: requirement,
            children: try children())
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

    /// Every sibling name this child waits for: `after`, then each `inject.from`, then the
    /// names its `if:`, `require:` and `repeat.until` use (in order, once each; an expression
    /// that does not parse names nothing).
    public var dependencyNames: [String] {
        var seen = Set<String>()
        return (after + inject.map(\.from) + expressionNames).filter { seen.insert($0).inserted }
    }

    /// The names its `if:`, `require:` and `repeat.until` use.
    public var expressionNames: [String] {
        guard condition != nil || requirement != nil || repeating != nil else { return [] }
        var names: [String] = []
        for (expression, allowsOutput) in [(condition, false), (requirement, false), (repeating?.until, true)] {
            if let parsed = try? expression?.parse(allowsOutput: allowsOutput) { names += parsed.references }
        }
        return names
    }
}

/// How a nested group came from a fan-out.
public enum FanOut: String, Sendable, Hashable {
    /// A child's `matrix`, expanded at submission.
    case matrix
}

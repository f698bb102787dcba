/// A condition decided by a closure: `true` satisfies it, `false` ignores the procedure
/// (cancels it without an error), a thrown error fails it.
public final class BlockCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds only an immutable `@Sendable` closure; the rest is Condition's, proved there.
    private let block: @Sendable () async throws -> Bool

    public init(_ block: @escaping @Sendable () async throws -> Bool) {
        self.block = block
        super.init()
    }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult {
        do { return try await block() ? .satisfied : .ignored } catch { return .failed(error) }
    }
}

/// Always satisfied (ProcedureKit's `TrueCondition`): a placeholder, or a carrier of
/// dependencies (`addDependency`, `produceDependency`) with nothing to decide.
public final class TrueCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds no state; the rest is Condition's.
    public init(name: String = "TrueCondition") {
        super.init()
        self.name = name
    }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult { .satisfied }
}

/// Always fails (ProcedureKit's `FalseCondition`), with a `conditionFailed` error naming it.
public final class FalseCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds no state; the rest is Condition's.
    public init(name: String = "FalseCondition") {
        super.init()
        self.name = name
    }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult {
        .failed(ProcedureError(.conditionFailed, "\(name) is never satisfied"))
    }
}

/// Turns a wrapped condition's failure into `.ignored` (ProcedureKit's `IgnoredCondition`):
/// the procedure is cancelled without an error instead of failing; satisfied and ignored
/// are kept. Its own produced dependencies, then the wrapped condition's, are added.
public final class IgnoredCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds only an immutable reference to a Sendable condition; the rest is Condition's.
    public let condition: Condition

    public init(_ condition: Condition) {
        self.condition = condition
        super.init()
        name = "Ignored<\(condition.name)>"
    }

    /// Its own produced dependencies, then those of the condition it wraps.
    public override var producedDependencies: [Procedure] {
        super.producedDependencies + condition.producedDependencies
    }

    public override var mutuallyExclusiveCategories: Set<String> {
        get { condition.mutuallyExclusiveCategories }
        set { condition.mutuallyExclusiveCategories = newValue }
    }

    override var dependenciesToAwait: [Procedure] { ownProducedDependencies }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult {
        switch await Condition.decide(condition, for: procedure) {
        case .satisfied: .satisfied
        case .ignored, .failed: .ignored
        }
    }
}

/// Inverts a condition: satisfied becomes failed, failed and ignored become satisfied.
public final class NegatedCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds only an immutable reference to a Sendable condition; the rest is Condition's.
    public let condition: Condition

    public init(_ condition: Condition) {
        self.condition = condition
        super.init()
        name = "Not<\(condition.name)>"
    }

    /// Its own produced dependencies, then those of the condition it inverts.
    public override var producedDependencies: [Procedure] {
        super.producedDependencies + condition.producedDependencies
    }

    override var dependenciesToAwait: [Procedure] { ownProducedDependencies }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult {
        switch await Condition.decide(condition, for: procedure) {
        case .satisfied:
            .failed(ProcedureError(.conditionFailed, "\(name): \(condition.name) was satisfied"))
        case .failed, .ignored:
            .satisfied
        }
    }
}

/// Evaluates a condition without the dependencies it would produce.
public final class SilentCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds only an immutable reference to a Sendable condition; the rest is Condition's.
    public let condition: Condition

    public init(_ condition: Condition) {
        self.condition = condition
        super.init()
        name = "Silent<\(condition.name)>"
    }

    public override var producedDependencies: [Procedure] { [] }

    public override var mutuallyExclusiveCategories: Set<String> {
        get { condition.mutuallyExclusiveCategories }
        set { condition.mutuallyExclusiveCategories = newValue }
    }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult {
        await condition.evaluate(for: procedure)
    }
}

/// All of several conditions: failed if any failed, else ignored if any was ignored, else
/// satisfied, whatever the order the results arrive in. A failure cancels the evaluations
/// still running. The same instance listed twice is evaluated once.
public final class AllOfCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds only an immutable array of Sendable conditions; the rest is Condition's.
    /// The conditions, each instance once, in the order first given.
    public let conditions: [Condition]

    public init(_ conditions: [Condition]) {
        self.conditions = Condition.unique(conditions)
        super.init()
    }

    /// Its own produced dependencies, then those of its conditions.
    public override var producedDependencies: [Procedure] {
        super.producedDependencies + conditions.flatMap(\.producedDependencies)
    }

    public override var mutuallyExclusiveCategories: Set<String> {
        get { conditions.reduce(into: Set<String>()) { $0.formUnion($1.mutuallyExclusiveCategories) } }
        set {}
    }

    override var dependenciesToAwait: [Procedure] { ownProducedDependencies }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult {
        await Condition.evaluateAll(conditions, for: procedure, producedDependencies: producedDependencies)
    }
}

/// Any of several conditions: satisfied as soon as one is satisfied (the others are
/// cancelled); otherwise failed if any failed, else ignored. The same instance listed twice
/// is evaluated once.
public final class AnyOfCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds only an immutable array of Sendable conditions; the rest is Condition's.
    /// The conditions, each instance once, in the order first given.
    public let conditions: [Condition]

    public init(_ conditions: [Condition]) {
        self.conditions = Condition.unique(conditions)
        super.init()
    }

    /// Its own produced dependencies, then those of its conditions.
    public override var producedDependencies: [Procedure] {
        super.producedDependencies + conditions.flatMap(\.producedDependencies)
    }

    override var dependenciesToAwait: [Procedure] { ownProducedDependencies }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult {
        await withTaskGroup(of: ConditionResult.self) { group in
            for condition in conditions {
                group.addTask { await Condition.decide(condition, for: procedure) }
            }
            var firstFailure: ConditionResult?
            for await result in group {
                switch result {
                case .satisfied:
                    group.cancelAll()
                    return .satisfied
                case .failed:
                    if firstFailure == nil { firstFailure = result }
                case .ignored:
                    continue
                }
            }
            return firstFailure ?? .ignored
        }
    }
}

/// Fails when any of the procedure's dependencies failed (ProcedureKit's
/// `NoFailedDependenciesCondition`). A cancelled dependency fails it too, unless
/// `ignoringCancellations` is set, in which case a cancelled dependency makes the
/// procedure ignored (cancelled without an error).
public final class NoFailedDependenciesCondition: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds no mutable state; the rest is Condition's.
    public let ignoringCancellations: Bool

    public init(ignoringCancellations: Bool = false) {
        self.ignoringCancellations = ignoringCancellations
        super.init()
    }

    public override func evaluate(for procedure: Procedure) async -> ConditionResult {
        let dependencies = procedure.dependencies
        if let failed = dependencies.first(where: { $0.outcome?.isFailed == true }) {
            return .failed(
                ProcedureError(.dependencyFailed, "dependency \(failed.name) failed: \(failed.outcome!.error!)"))
        }
        if let cancelled = dependencies.first(where: { $0.outcome?.isCancelled == true }) {
            if ignoringCancellations { return .ignored }
            return .failed(ProcedureError(.dependencyCancelled, "dependency \(cancelled.name) was cancelled"))
        }
        return .satisfied
    }
}

/// Makes procedures that share a category run one at a time, across every queue that uses
/// the same `ExclusivityManager` (by default, the whole process; on a Cohort worker, the
/// whole cluster). The lock is requested after dependencies and conditions, and released
/// when the procedure finishes.
public final class MutuallyExclusive: Condition, @unchecked Sendable {
    // @unchecked Sendable: adds only immutable `let`s of Sendable values; the rest is Condition's.
    public init(category: String) {
        super.init()
        name = "MutuallyExclusive<\(category)>"
        mutuallyExclusiveCategories = [category]
    }

    public convenience init<T>(_ type: T.Type) {
        self.init(category: String(describing: type))
    }

    public init(categories: Set<String>) {
        super.init()
        name = "MutuallyExclusive<\(categories.sorted().joined(separator: ","))>"
        mutuallyExclusiveCategories = categories
    }
}

import Synchronization

/// What a condition decided.
public enum ConditionResult: Sendable, CustomStringConvertible {
    /// The procedure may run.
    case satisfied
    /// The procedure must not run, and that is no error: it is cancelled without one.
    case ignored
    /// The procedure must not run: it finishes failed with this error, never executing.
    case failed(any Error)

    public var description: String {
        switch self {
        case .satisfied: "satisfied"
        case .ignored: "ignored"
        case .failed(let error): "failed: \(error)"
        }
    }
}

/// A condition on a procedure, evaluated after the procedure's dependencies have finished
/// and before it takes any exclusivity lock (ProcedureKit's `Condition`).
///
/// Subclass and override `evaluate(for:)`, or use `BlockCondition`. Evaluation is `async`
/// and cooperatively cancelled: when another condition has already decided the outcome, or
/// the procedure is cancelled, the evaluating task is cancelled.
///
/// A condition may produce dependencies (`produceDependency(_:)`): they are added to the
/// procedure's queue and finish before the condition is evaluated. A condition may also
/// name mutual-exclusion categories (`MutuallyExclusive` does).
open class Condition: @unchecked Sendable {
    // @unchecked Sendable: mutable state lives in `state`, behind a lock.
    private struct State {
        var name: String?
        var producedDependencies: [Procedure] = []
        var categories: Set<String> = []
    }

    private let state = Mutex(State())

    public init() {}

    /// A name for logs and error messages.
    public var name: String {
        get { state.withLock { $0.name } ?? String(describing: type(of: self)) }
        set { state.withLock { $0.name = newValue } }
    }

    /// Decides whether `procedure` may run. The default is `.satisfied`.
    open func evaluate(for procedure: Procedure) async -> ConditionResult { .satisfied }

    /// Adds a procedure that must finish before this condition is evaluated.
    public func produceDependency(_ procedure: Procedure) {
        state.withLock { $0.producedDependencies.append(procedure) }
    }

    /// The dependencies this condition produces. `SilentCondition` hides them.
    open var producedDependencies: [Procedure] { state.withLock { $0.producedDependencies } }

    /// The mutual-exclusion categories this condition asks for.
    open var mutuallyExclusiveCategories: Set<String> {
        get { state.withLock { $0.categories } }
        set { state.withLock { $0.categories = newValue } }
    }
}

extension Condition {
    /// Evaluates `conditions` concurrently and combines them as "all must be satisfied".
    /// The first result that is not `.satisfied` decides; the other evaluations are cancelled.
    static func evaluateAll(_ conditions: [Condition], for procedure: Procedure) async -> ConditionResult {
        if conditions.count == 1 { return await conditions[0].evaluate(for: procedure) }
        return await withTaskGroup(of: ConditionResult.self) { group in
            for condition in conditions {
                group.addTask { await condition.evaluate(for: procedure) }
            }
            for await result in group {
                if case .satisfied = result { continue }
                group.cancelAll()
                return result
            }
            return .satisfied
        }
    }
}

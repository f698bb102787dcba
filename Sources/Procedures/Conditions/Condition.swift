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
/// procedure's queue and finish before the condition is evaluated. Each condition waits only
/// for its own: a condition that fails meanwhile decides at once, and the produced
/// dependencies still running are cancelled. A condition may also name mutual-exclusion
/// categories (`MutuallyExclusive` does).
open class Condition: @unchecked Sendable {
    // @unchecked Sendable: mutable state lives in `state`, behind a lock.
    private struct State {
        var name: String?
        var producedDependencies: [Procedure] = []
        var dependencies: [Procedure] = []
        var requirements: DependencyRequirements = []
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

    /// Adds a procedure that must finish before this condition is evaluated; the condition
    /// adds it to the procedure's queue when the procedure's conditions are evaluated.
    public func produceDependency(_ procedure: Procedure) {
        state.withLock { $0.producedDependencies.append(procedure) }
    }

    /// Makes the condition wait for `procedure` to finish before it is evaluated. Unlike a
    /// produced dependency it is not added to any queue: something else runs it (it may
    /// also be a dependency of the procedure itself, or of other conditions).
    public func addDependency(_ procedure: Procedure) {
        state.withLock { $0.dependencies.append(procedure) }
    }

    /// Removes `procedure` from this condition's dependencies, produced or not.
    public func removeDependency(_ procedure: Procedure) {
        state.withLock { state in
            state.dependencies.removeAll { $0 === procedure }
            state.producedDependencies.removeAll { $0 === procedure }
        }
    }

    /// The dependencies added with `addDependency(_:)` (not the produced ones, nor those of
    /// the conditions a compound condition combines).
    public var dependencies: [Procedure] { state.withLock { $0.dependencies } }

    /// What this condition requires of its own dependencies' outcomes (produced or added),
    /// checked once they have finished and before it is evaluated: a failed dependency
    /// under `.noFailed` fails the condition with a `dependencyFailed` error, a cancelled
    /// one under `.noCancelled` with a `dependencyCancelled` error, and `evaluate(for:)` is
    /// not called. None by default.
    public var dependencyRequirements: DependencyRequirements {
        get { state.withLock { $0.requirements } }
        set { state.withLock { $0.requirements = newValue } }
    }

    /// The dependencies this condition produces (a compound condition's: its own, then its
    /// conditions'). `SilentCondition` hides them.
    open var producedDependencies: [Procedure] { state.withLock { $0.producedDependencies } }

    /// The produced dependencies to wait for before evaluating this condition: all of them,
    /// except for a compound condition, whose conditions each wait for their own.
    var dependenciesToAwait: [Procedure] { producedDependencies }

    /// The dependencies produced by this condition itself, not by those it wraps.
    final var ownProducedDependencies: [Procedure] { state.withLock { $0.producedDependencies } }

    /// The mutual-exclusion categories this condition asks for.
    open var mutuallyExclusiveCategories: Set<String> {
        get { state.withLock { $0.categories } }
        set { state.withLock { $0.categories = newValue } }
    }
}

extension Condition {
    /// The conditions without repeats: the same instance listed twice is evaluated once.
    static func unique(_ conditions: [Condition]) -> [Condition] {
        var seen = Set<ObjectIdentifier>()
        return conditions.filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// Evaluates `condition` once the dependencies it produced itself have finished (a
    /// compound condition's own; its conditions wait for theirs as it evaluates them), so
    /// that no condition waits for another's. Cancelled, it answers `.ignored` unevaluated.
    static func decide(_ condition: Condition, for procedure: Procedure) async -> ConditionResult {
        let dependencies = condition.dependencies
        await waitUntilFinished(condition.dependenciesToAwait + dependencies)
        if Task.isCancelled { return .ignored }
        let requirements = condition.dependencyRequirements
        if !requirements.isEmpty,
            let violation = requirements.violation(
                by: condition.ownProducedDependencies + dependencies, of: "condition \(condition.name)")
        {
            return .failed(violation.error)
        }
        return await condition.evaluate(for: procedure)
    }

    /// Evaluates `conditions` concurrently (each with `decide`) and combines them as "all
    /// must be satisfied": failed if any failed, else ignored if any was ignored, else
    /// satisfied, whatever the order the results arrive in. A failure decides at once: the
    /// evaluations still running are cancelled, and so are the still-unfinished procedures
    /// of `producedDependencies` (which they may be waiting for).
    static func evaluateAll(
        _ conditions: [Condition], for procedure: Procedure, producedDependencies: [Procedure] = []
    ) async -> ConditionResult {
        let conditions = unique(conditions)
        if conditions.count == 1 { return await decide(conditions[0], for: procedure) }
        return await withTaskGroup(of: ConditionResult.self) { group in
            for condition in conditions {
                group.addTask { await Condition.decide(condition, for: procedure) }
            }
            var ignored = false
            for await result in group {
                switch result {
                case .satisfied:
                    continue
                case .ignored:
                    // Not decisive: a failure still to come wins over it.
                    ignored = true
                case .failed:
                    group.cancelAll()
                    for dependency in producedDependencies where !dependency.isFinished { dependency.cancel() }
                    return result
                }
            }
            return ignored ? .ignored : .satisfied
        }
    }

    /// Waits until every procedure in `dependencies` has finished, or the task is cancelled.
    static func waitUntilFinished(_ dependencies: [Procedure]) async {
        for dependency in dependencies {
            guard !Task.isCancelled else { return }
            let waiter = CancellableWaiter()
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    waiter.wait(continuation)
                    dependency.whenFinished { _ in waiter.resume() }
                }
            } onCancel: {
                waiter.resume()
            }
        }
    }
}

/// A continuation resumed once, by whichever comes first: the event or the task's
/// cancellation (which may come before the continuation exists).
final class CancellableWaiter: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Void, Never>)
        case resumed
    }
    private let state = Mutex(State.idle)

    func wait(_ continuation: CheckedContinuation<Void, Never>) {
        let resumeNow = state.withLock { state -> Bool in
            if case .resumed = state { return true }
            state = .waiting(continuation)
            return false
        }
        if resumeNow { continuation.resume() }
    }

    func resume() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state = .resumed }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        continuation?.resume()
    }
}

/// What a procedure requires of its dependencies' outcomes.
///
/// The default is none: as in ProcedureKit, a dependent runs once its dependencies have
/// finished, however they ended. That is an explicit choice, so that cleanup procedures
/// run after failures; ask for more with these options or `NoFailedDependenciesCondition`.
/// (The cluster's spec default, `onChildFailure: cancel-dependents`, is built on
/// `.noFailed` and `.noCancelled`.)
public struct DependencyRequirements: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A failed dependency fails the dependent (it never executes).
    public static let noFailed = DependencyRequirements(rawValue: 1 << 0)
    /// A cancelled dependency cancels the dependent.
    public static let noCancelled = DependencyRequirements(rawValue: 1 << 1)
    /// With `.noFailed`: a dependency that was cancelled with an error counts as cancelled,
    /// not failed. Without this option, a cancellation that carries an error counts as a failure.
    public static let ignoreFailedIfCancelled = DependencyRequirements(rawValue: 1 << 2)
}

extension Procedure {
    /// What this procedure requires of its dependencies; see `DependencyRequirements`.
    public var dependencyRequirements: DependencyRequirements {
        get { core.withLock { $0.dependencyRequirements } }
        set { core.withLock { $0.dependencyRequirements = newValue } }
    }

    /// The first violated requirement, as the action to take.
    func checkDependencyRequirements() -> (cancel: Bool, error: any Error)? {
        let (requirements, dependencies) = core.withLock { ($0.dependencyRequirements, $0.dependencies) }
        guard !requirements.isEmpty else { return nil }
        return requirements.violation(by: dependencies, of: name)
    }
}

extension DependencyRequirements {
    /// The first of `dependencies` whose outcome these requirements refuse, as the action to
    /// take (`cancel` true for a cancelled dependency under `.noCancelled`) and the error
    /// that names it; `dependent` names who required it.
    func violation(by dependencies: [Procedure], of dependent: String) -> (cancel: Bool, error: any Error)? {
        for dependency in dependencies {
            switch dependency.outcome {
            case .failed(let error)? where contains(.noFailed):
                return (
                    false,
                    ProcedureError(.dependencyFailed, "\(dependent): dependency \(dependency.name) failed: \(error)")
                )
            case .cancelled(let reason?)? where contains(.noFailed) && !contains(.ignoreFailedIfCancelled):
                return (
                    false,
                    ProcedureError(
                        .dependencyFailed, "\(dependent): dependency \(dependency.name) was cancelled: \(reason)")
                )
            case .cancelled? where contains(.noCancelled):
                return (
                    true,
                    ProcedureError(.dependencyCancelled, "\(dependent): dependency \(dependency.name) was cancelled")
                )
            default:
                continue
            }
        }
        return nil
    }
}

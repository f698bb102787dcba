/// The errors the engine itself produces. A caller can switch on `code`; `message`
/// is for people and names the procedures involved.
public struct ProcedureError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// A condition evaluated to failed.
        case conditionFailed
        /// A dependency failed and the dependent's requirements forbid that.
        case dependencyFailed
        /// A dependency was cancelled and the dependent's requirements forbid that.
        case dependencyCancelled
        /// The producer of an injected result failed, was cancelled or gave no value.
        case requirementNotSatisfied
        /// A `TimeoutObserver` fired.
        case timedOut
        /// The procedure's parent group was cancelled.
        case parentCancelled
        /// A programmer error the engine refuses to carry out (e.g. adding to a finished group).
        case invalidUse
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func timedOut(after duration: Duration) -> ProcedureError {
        ProcedureError(.timedOut, "timed out after \(duration)")
    }
}

/// The error a group finishes with when children failed: each child's name and error,
/// in the order they finished.
public struct GroupError: Error, Sendable, CustomStringConvertible {
    public struct ChildError: Sendable {
        public let child: String
        public let error: any Error
    }

    public let errors: [ChildError]

    public init(errors: [ChildError]) { self.errors = errors }

    public var description: String {
        errors.map { "\($0.child): \($0.error)" }.joined(separator: "; ")
    }
}

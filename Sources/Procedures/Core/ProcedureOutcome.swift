/// How a finished procedure ended. Every finished procedure has exactly one outcome
/// (AsyncOperation's rule): it succeeded, it failed with an error, or it was cancelled.
///
/// A procedure that was cancelled always ends `.cancelled`, even if it later calls
/// `finish(with:)` with an error: the error, if any, travels as the cancellation's reason.
public enum ProcedureOutcome: Sendable, CustomStringConvertible {
    case succeeded
    case failed(any Error)
    case cancelled((any Error)?)

    public var isSucceeded: Bool { if case .succeeded = self { true } else { false } }
    public var isFailed: Bool { if case .failed = self { true } else { false } }
    public var isCancelled: Bool { if case .cancelled = self { true } else { false } }

    /// The failure's error, or the cancellation's reason; nil on success.
    public var error: (any Error)? {
        switch self {
        case .succeeded: nil
        case .failed(let error): error
        case .cancelled(let reason): reason
        }
    }

    public var description: String {
        switch self {
        case .succeeded: "succeeded"
        case .failed(let error): "failed: \(error)"
        case .cancelled(nil): "cancelled"
        case .cancelled(let reason?): "cancelled: \(reason)"
        }
    }
}

/// A procedure's result value: ProcedureKit's `ProcedureResult`, spelled with Swift's `Result`.
public typealias ProcedureResult<Value> = Result<Value, any Error>

/// A value that may not be there yet: an input before injection, an output before finishing.
public enum Pending<Value> {
    case pending
    case ready(Value)

    /// The value, if it is ready.
    public var value: Value? { if case .ready(let value) = self { value } else { nil } }
    public var isPending: Bool { if case .pending = self { true } else { false } }

    public init(_ value: Value?) { self = value.map(Pending.ready) ?? .pending }
}

extension Pending: Sendable where Value: Sendable {}

extension Pending where Value: _ResultProtocol {
    /// The success value of a ready result.
    public var success: Value.Success? { value?._success }
    /// The error of a ready result.
    public var failure: (any Error)? { value?._failure }
}

/// Lets `Pending<ProcedureResult<T>>` offer `success` and `failure`.
public protocol _ResultProtocol {
    associatedtype Success
    var _success: Success? { get }
    var _failure: (any Error)? { get }
}

extension Result: _ResultProtocol {
    public var _success: Success? { try? get() }
    public var _failure: (any Error)? { if case .failure(let error) = self { error } else { nil } }
}

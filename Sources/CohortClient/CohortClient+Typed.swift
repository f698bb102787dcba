import CohortSpec
import CohortWire

extension CohortClient {
    /// A finished child's output decoded as `Output`: `try await client.result(of: "count", in: group.id, as: Counts.self)`.
    ///
    /// - Parameters:
    ///   - child: the child's path (`tests/unit`), or `nil` for the group's own result.
    ///   - group: the group's id.
    /// - Throws: ``ClientError``: ``ClientError/Code/childFailed`` for a child that failed or
    ///   was cancelled (its message says which, and why); ``ClientError/Code/undecodable`` for an
    ///   output that does not decode as `Output` (naming the member at fault); and the errors of
    ///   ``result(_:child:)``.
    public func result<Output: Decodable>(of child: String?, in group: String, as type: Output.Type = Output.self)
        async throws(ClientError) -> Output
    {
        try await result(group, child: child).output(as: Output.self, child: "\(group)/\(child ?? "")")
    }

    /// A finished child's output decoded as its kind's `Output`:
    /// `try await client.result(of: "count", in: group.id, as: wordcount)`.
    /// - Throws: as ``result(of:in:as:)-(_,_,Output.Type)``.
    public func result<Input, Output>(of child: String?, in group: String, as kind: Kind<Input, Output>)
        async throws(ClientError) -> Output
    {
        try await result(of: child, in: group, as: Output.self)
    }
}

extension ChildOutcome {
    /// Whether the child succeeded.
    public var isSucceeded: Bool {
        if case .succeeded = self { return true }
        return false
    }

    /// The output of a child that succeeded; `nil` otherwise.
    public var output: JSONValue? {
        if case .succeeded(let output) = self { return output }
        return nil
    }

    /// The error message of a child that failed, or the reason of one that was cancelled;
    /// `nil` for one that succeeded.
    public var error: String? {
        switch self {
        case .succeeded: nil
        case .failed(let message), .cancelled(let message): message
        }
    }

    /// The output decoded as `Output`, for a child that succeeded.
    /// - Throws: ``ClientError/Code/childFailed`` if it failed or was cancelled,
    ///   ``ClientError/Code/undecodable`` if its output does not decode as `Output`.
    public func output<Output: Decodable>(as type: Output.Type = Output.self) throws(ClientError) -> Output {
        try output(as: type, child: nil)
    }

    /// The output decoded as the kind's `Output`; see ``output(as:)-(Output.Type)``.
    public func output<Input, Output>(as kind: Kind<Input, Output>) throws(ClientError) -> Output {
        try output(as: Output.self, child: nil)
    }

    func output<Output: Decodable>(as type: Output.Type, child: String?) throws(ClientError) -> Output {
        let name = child.map { "\($0) " } ?? "the child "
        switch self {
        case .succeeded(let value):
            do {
                return try value.decode(Output.self)
            } catch {
                throw ClientError(.undecodable, "the output of \(name)is not a \(Output.self): \(error)")
            }
        case .failed(let message):
            throw ClientError(.childFailed, "\(name)failed: \(message)")
        case .cancelled(let reason):
            throw ClientError(.childFailed, "\(name)was cancelled: \(reason)")
        }
    }
}

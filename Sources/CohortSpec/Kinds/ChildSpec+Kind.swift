extension ChildSpec {
    /// A procedure child that runs `kind` with `input`:
    /// `try ChildSpec("count", wordcount, Text(text: line), after: ["fetch"])`.
    ///
    /// The input is encoded now, as the child's `with`; injections (`inject`) write into
    /// that JSON before the child runs, so give the injected members any placeholder value.
    /// - Throws: `EncodingError` if `input` has no JSON form (a `Double.nan`, say).
    public init<Input, Output>(
        _ name: String,
        _ kind: Kind<Input, Output>,
        _ input: Input,
        after: [String] = [],
        exclusive: [String] = [],
        requires: [String] = [],
        timeout: Duration? = nil,
        retry: RetryPolicy? = nil,
        onWorkerLoss: WorkerLossPolicy = .retry,
        inject: [Injection] = []
    ) throws {
        self.init(
            name, run: kind.name, with: try JSONValue(encoding: input), after: after, exclusive: exclusive,
            requires: requires, timeout: timeout, retry: retry, onWorkerLoss: onWorkerLoss, inject: inject)
    }
}

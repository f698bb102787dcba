/// Runs a procedure again after each successful run until an expression over its latest output
/// is true, at most `max` runs in all (the spec's `repeat:`; ProcedureKit's `RepeatProcedure`,
/// bounded). Each run is a new attempt with its number; a run that fails follows `retry`.
///
/// `until` true after a run: the child succeeded with that run's output. `max` runs done with
/// `until` still false: the child fails, naming `until` and `max`.
public struct RepeatPolicy: Sendable, Hashable {
    /// Evaluated after each successful run, with `output` bound to that run's output:
    /// `output.healthy == true`.
    public var until: SpecExpression
    /// The most runs in all, the first included; 1 to ``maxRuns``.
    public var max: Int
    /// The wait between a run and the next. Defaults to none.
    public var every: Duration

    /// The most runs a `repeat` may ask for: 10,000.
    public static let maxRuns = 10_000

    public init(until: SpecExpression, max: Int, every: Duration = .zero) {
        self.until = until
        self.max = max
        self.every = every
    }
}

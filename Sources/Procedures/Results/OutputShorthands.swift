// Shorthands that make a procedure consuming another's output (ProcedureKit's `map`,
// `flatMap`, `filter`, `reduce`, `gathered()` on output procedures and their collections).
// The procedure made depends on its producer(s); add both to a queue.

extension OutputProcedure where Output: Sequence, Output.Element: Sendable {
    /// A `MapProcedure` of this procedure's output: `numbers.map { $0 * 2 }`.
    public func map<Mapped: Sendable>(_ transform: @escaping @Sendable (Output.Element) throws -> Mapped)
        -> MapProcedure<Output.Element, [Mapped]>
    {
        MapProcedure<Output.Element, [Mapped]>(transform: transform).injectResult(from: self) { Array($0) }
    }

    /// A `CompactMapProcedure` of this procedure's output (ProcedureKit's `flatMap`).
    public func compactMap<Mapped: Sendable>(_ transform: @escaping @Sendable (Output.Element) throws -> Mapped?)
        -> CompactMapProcedure<Output.Element, Mapped>
    {
        CompactMapProcedure(transform: transform).injectResult(from: self) { Array($0) }
    }

    /// A `FilterProcedure` of this procedure's output.
    public func filter(_ isIncluded: @escaping @Sendable (Output.Element) throws -> Bool)
        -> FilterProcedure<Output.Element>
    {
        FilterProcedure(isIncluded: isIncluded).injectResult(from: self) { Array($0) }
    }

    /// A `ReduceProcedure` of this procedure's output.
    public func reduce<Result: Sendable>(
        _ initial: Result, _ nextPartialResult: @escaping @Sendable (Result, Output.Element) throws -> Result
    ) -> ReduceProcedure<Output.Element, Result> {
        ReduceProcedure(initial: initial, nextPartialResult: nextPartialResult).injectResult(from: self) { Array($0) }
    }
}

extension Collection where Element: OutputProcedure {
    /// A procedure whose output is every one of these procedures' outputs, in order
    /// (ProcedureKit's `gathered()`); it fails as `injectResults(from:)` does if one of them
    /// has none.
    public func gathered() -> TransformProcedure<[Element.Output], [Element.Output]> {
        TransformProcedure<[Element.Output], [Element.Output]> { $0 }.injectResults(from: Array(self))
    }

    /// Transforms each of these procedures' outputs, dropping nils (ProcedureKit's
    /// `flatMap` on a collection of output procedures; named so that it cannot be mistaken
    /// for `Sequence.compactMap` over the procedures themselves).
    public func compactMapOutputs<Mapped: Sendable>(
        _ transform: @escaping @Sendable (Element.Output) throws -> Mapped?
    ) -> CompactMapProcedure<Element.Output, Mapped> {
        CompactMapProcedure(transform: transform).injectResults(from: Array(self))
    }

    /// Folds these procedures' outputs (ProcedureKit's `reduce` on a collection of output
    /// procedures; named so that it cannot be mistaken for `Sequence.reduce` over the
    /// procedures themselves).
    public func reduceOutputs<Result: Sendable>(
        _ initial: Result, _ nextPartialResult: @escaping @Sendable (Result, Element.Output) throws -> Result
    ) -> ReduceProcedure<Element.Output, Result> {
        ReduceProcedure(initial: initial, nextPartialResult: nextPartialResult).injectResults(from: Array(self))
    }
}

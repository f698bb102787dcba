/// Transforms each element of an array input (ProcedureKit's `MapProcedure`).
open class MapProcedure<Element: Sendable, Mapped: Sendable>: TransformProcedure<[Element], Mapped>, @unchecked Sendable
where Mapped: RangeReplaceableCollection {
    // @unchecked Sendable: adds no stored state; the rest is TransformProcedure's.
    public init(input: [Element]? = nil, transform: @escaping @Sendable (Element) throws -> Mapped.Element) {
        super.init(input: input) { elements in
            var result = Mapped()
            result.reserveCapacity(elements.count)
            for element in elements { result.append(try transform(element)) }
            return result
        }
    }
}

/// Transforms each element of an array input, dropping the nils (ProcedureKit's
/// `FlatMapProcedure`, named as Swift names that operation since Swift 4.1).
open class CompactMapProcedure<Element: Sendable, Mapped: Sendable>: TransformProcedure<[Element], [Mapped]>,
    @unchecked Sendable
{
    // @unchecked Sendable: adds no stored state; the rest is TransformProcedure's.
    public init(input: [Element]? = nil, transform: @escaping @Sendable (Element) throws -> Mapped?) {
        super.init(input: input) { elements in try elements.compactMap(transform) }
    }
}

/// Keeps the elements of an array input that `isIncluded` accepts (ProcedureKit's `FilterProcedure`).
open class FilterProcedure<Element: Sendable>: TransformProcedure<[Element], [Element]>, @unchecked Sendable {
    // @unchecked Sendable: adds no stored state; the rest is TransformProcedure's.
    public init(input: [Element]? = nil, isIncluded: @escaping @Sendable (Element) throws -> Bool) {
        super.init(input: input) { elements in try elements.filter(isIncluded) }
    }
}

/// Folds an array input into one value (ProcedureKit's `ReduceProcedure`).
open class ReduceProcedure<Element: Sendable, Result: Sendable>: TransformProcedure<[Element], Result>,
    @unchecked Sendable
{
    // @unchecked Sendable: adds no stored state; the rest is TransformProcedure's.
    public init(
        input: [Element]? = nil, initial: Result,
        nextPartialResult: @escaping @Sendable (Result, Element) throws -> Result
    ) {
        super.init(input: input) { elements in try elements.reduce(initial, nextPartialResult) }
    }
}

/// Runs one procedure per element of its array input, concurrently, and outputs their
/// outputs in input order (ProcedureKit's `BatchProcedure`). A batch whose input is not
/// ready when it starts is cancelled with a `requirementNotSatisfied` error.
open class BatchProcedure<Item: InputProcedure & OutputProcedure>: GroupProcedure, InputProcedure, OutputProcedure,
    @unchecked Sendable
{
    // @unchecked Sendable: its added state is immutable `let`s, a locked ResultStorage and a `Protected`; the rest is GroupProcedure's.
    private let storage: ResultStorage<[Item.Input], [Item.Output]>
    private let body: @Sendable (Item.Input) -> Item
    private let items = Protected<[Item]>([])

    public init(input: [Item.Input]? = nil, body: @escaping @Sendable (Item.Input) -> Item) {
        storage = ResultStorage(input: input)
        self.body = body
        super.init(children: [])
    }

    public var input: Pending<[Item.Input]> {
        get { storage.input.withLock { $0 } }
        set { storage.input.withLock { $0 = newValue } }
    }

    public var output: Pending<ProcedureResult<[Item.Output]>> {
        get { storage.output.withLock { $0 } }
        set { storage.output.withLock { $0 = newValue } }
    }

    open override func execute() {
        guard let elements = input.value else {
            cancel(with: ProcedureError(.requirementNotSatisfied, "\(name) started without its input"))
            super.execute()
            return
        }
        let made = elements.map { element -> Item in
            let item = body(element)
            item.input = .ready(element)
            return item
        }
        items.value = made
        add(children: made)
        super.execute()
    }

    open override func groupDidFinishChildren(with errors: [GroupError.ChildError]) {
        if errors.isEmpty {
            let outputs = items.value.map { $0.output.value }
            if outputs.allSatisfy({ $0 != nil }) {
                do {
                    output = .ready(.success(try outputs.map { try $0!.get() }))
                } catch {
                    output = .ready(.failure(error))
                }
            }
        } else {
            output = .ready(.failure(GroupError(errors: errors)))
        }
        super.groupDidFinishChildren(with: errors)
    }
}

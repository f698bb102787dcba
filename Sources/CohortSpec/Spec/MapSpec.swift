/// A procedure child's `map`: fan-out at run time, one procedure per item of a list another
/// procedure returns (docs/spec.md, "Fan-out at run time: map"; ProcedureKit's Map, Reduce
/// and Batch).
///
/// `map: { from: list-files, select: files, into: with.path, maxParallel: 4 }` on a child
/// `convert` makes a nested group `convert` that waits for `list-files` (and whatever else the
/// child waits for). Once all of that has finished, the coordinator reads the list at
/// `select` in `list-files`'s output and adds one procedure per item, `convert[0]`,
/// `convert[1]`, …: each is the child as written, with the item under `map.item` in its input
/// (and its index under `map.index`), and at `into` too when given. At most `maxParallel` of
/// them run at a time. A dependent that names `convert` waits for every one, and injecting
/// from it gives the list of their outputs in item order.
public struct MapSpec: Sendable, Hashable {
    /// The procedure whose output holds the list, resolved like `after`.
    public var from: String
    /// Where the list is in that output; `.` (the default) for the whole output.
    public var select: JSONPath
    /// Where each child's input gets its item besides `map.item`; nil for nowhere else.
    public var into: JSONPath?
    /// At most this many of the children run (or wait for a retry) at a time; nil for no limit.
    public var maxParallel: Int?

    public init(from: String, select: JSONPath = .root, into: JSONPath? = nil, maxParallel: Int? = nil) {
        self.from = from
        self.select = select
        self.into = into
        self.maxParallel = maxParallel
    }

    /// The name of the child for item `index`: `convert[3]`.
    public static func childName(_ base: String, index: Int) -> String {
        "\(base)[\(index)]"
    }

    /// The environment variables that carry a `shell` child's item: `COHORT_MAP_INDEX` and
    /// `COHORT_MAP_ITEM` (a string as it is, anything else as JSON).
    public static let indexVariable = "COHORT_MAP_INDEX"
    public static let itemVariable = "COHORT_MAP_ITEM"

    /// The procedure for item `index` of a map child: the child as written (without `map`,
    /// `after`, `if` and `require`, which its group has), named `NAME[index]`, with
    /// `map: {index, item}` in its input and the item at `into`.
    public static func child(_ template: ChildSpec, index: Int, item: JSONValue) -> ChildSpec {
        var input = template.input ?? .emptyObject
        if case .object(var members) = input {
            members["map"] = .object(["index": .int(Int64(index)), "item": item])
            input = .object(members)
        }
        if let into = template.map?.into { input.set(into, to: item) }
        return ChildSpec(
            childName(template.name, index: index), run: template.run ?? "", with: input,
            exclusive: template.exclusive, requires: template.requires, timeout: template.timeout,
            retry: template.retry, onWorkerLoss: template.onWorkerLoss, inject: template.inject,
            repeating: template.repeating)
    }
}

/// What the coordinator needs of a map child once it is a nested group: the map and the
/// child as written (its procedure, `exclusive`, `retry`, … for each item).
public final class MapFanOut: Sendable, Hashable {
    /// The child as written, `map` included.
    public let template: ChildSpec
    public var map: MapSpec { template.map ?? MapSpec(from: "") }

    init(template: ChildSpec) {
        self.template = template
    }

    public static func == (lhs: MapFanOut, rhs: MapFanOut) -> Bool { lhs.template == rhs.template }
    public func hash(into hasher: inout Hasher) { hasher.combine(template) }
}

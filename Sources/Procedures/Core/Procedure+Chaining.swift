import Synchronization

// ProcedureKit's conveniences for building and starting chains: `then(do:)`, `enqueue()`
// and `identity`.

extension Procedure {
    /// Makes `next` run after this procedure (it depends on this one) and returns both,
    /// in order, to be chained further or enqueued: `fetch.then(do: parse).enqueue()`.
    @discardableResult
    public final func then(do next: Procedure) -> [Procedure] {
        next.addDependency(self)
        return [self, next]
    }

    /// Like `then(do:)` with the procedure `block` makes; a nil from `block` adds nothing
    /// (the result is just this procedure), and an error it throws is rethrown.
    @discardableResult
    public final func then(do block: () throws -> Procedure?) rethrows -> [Procedure] {
        guard let next = try block() else { return [self] }
        return then(do: next)
    }

    /// Adds this procedure to `queue`, by default the process's shared queue.
    public final func enqueue(on queue: ProcedureQueue = .shared) {
        queue.add(self)
    }

    /// A name and a number that tell this procedure from every other one made in the
    /// process (ProcedureKit's `identity`), for logs: `Fetch #12`. The number is given the
    /// first time it is asked for; the name is the procedure's name at that time.
    public var identity: ProcedureIdentity {
        let number = core.withLock { core -> UInt64 in
            if core.identityNumber == 0 { core.identityNumber = ProcedureIdentity.next() }
            return core.identityNumber
        }
        return ProcedureIdentity(name: name, number: number)
    }
}

/// What tells one procedure from another: equal only for the same procedure (by its number),
/// whatever its name.
public struct ProcedureIdentity: Hashable, Sendable, CustomStringConvertible {
    /// The procedure's name when its identity was first read.
    public let name: String
    /// A number no other procedure of this process has.
    public let number: UInt64

    public var description: String { "\(name) #\(number)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.number == rhs.number }
    public func hash(into hasher: inout Hasher) { hasher.combine(number) }

    private static let counter = Atomic<UInt64>(0)
    static func next() -> UInt64 { counter.wrappingAdd(1, ordering: .relaxed).newValue }
}

extension Sequence where Element: Procedure {
    /// Makes `next` run after every procedure of this sequence and returns them all, `next`
    /// last: `[download, decode].then(do: merge)`.
    @discardableResult
    public func then(do next: Procedure) -> [Procedure] {
        let all: [Procedure] = Array(self)
        for procedure in all { next.addDependency(procedure) }
        return all + [next]
    }

    /// Like `then(do:)` with the procedure `block` makes; a nil from `block` adds nothing,
    /// and an error it throws is rethrown.
    @discardableResult
    public func then(do block: () throws -> Procedure?) rethrows -> [Procedure] {
        guard let next = try block() else { return Array(self) }
        return then(do: next)
    }

    /// Adds every procedure of this sequence to `queue`, by default the process's shared queue.
    public func enqueue(on queue: ProcedureQueue = .shared) {
        queue.add(self.map { $0 as Procedure })
    }
}

extension ProcedureQueue {
    /// A queue for the whole process, without a limit on concurrency, for `enqueue()`
    /// (ProcedureKit's `ProcedureQueue.main`; Linux has no main queue to run procedures on).
    public static let shared = ProcedureQueue(name: "shared")
}

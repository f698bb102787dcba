import Synchronization

/// A value shared with test threads, engine callbacks and escaping closures (which cannot
/// capture a `Mutex` itself): Synchronization's `Mutex` inside.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    public var value: Value {
        get { mutex.withLock { $0 } }
        set { mutex.withLock { $0 = newValue } }
    }

    /// Changes the value under the lock; returns what `body` returns.
    @discardableResult
    public func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// Resumes a continuation once, from whichever of several racing callbacks comes first.
public final class OnceResumer<Value: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<Value, Never>?>(nil)

    public init(_ continuation: CheckedContinuation<Value, Never>) { self.continuation.withLock { $0 = continuation } }

    public func resume(_ value: Value) {
        let taken = continuation.withLock { slot in
            defer { slot = nil }
            return slot
        }
        taken?.resume(returning: value)
    }
}

/// An ordered record of what happened, written from any thread.
public final class EventLog: Sendable {
    private let events = Mutex<[String]>([])

    public init() {}

    public func record(_ event: String) { events.withLock { $0.append(event) } }
    public var all: [String] { events.withLock { $0 } }
    public var count: Int { events.withLock { $0.count } }
    public func count(of event: String) -> Int { events.withLock { $0.filter { $0 == event }.count } }
    /// The position of the first `event`, or nil.
    public func index(of event: String) -> Int? { events.withLock { $0.firstIndex(of: event) } }
}

/// Counts how many holders are inside at once, and the most there ever were.
public final class Gauge: Sendable {
    private let state = Mutex<(current: Int, max: Int, total: Int)>((0, 0, 0))

    public init() {}

    public func enter() {
        state.withLock {
            $0.current += 1
            $0.max = Swift.max($0.max, $0.current)
            $0.total += 1
        }
    }
    public func leave() { state.withLock { $0.current -= 1 } }
    public var max: Int { state.withLock { $0.max } }
    public var current: Int { state.withLock { $0.current } }
    public var total: Int { state.withLock { $0.total } }
}

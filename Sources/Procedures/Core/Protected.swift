import Synchronization

/// A value behind a lock, for the state subclasses keep beside the engine's own
/// (inputs, outputs, tasks, timers). Reads and writes are atomic; compound updates go
/// through `withLock`.
public final class Protected<Value>: @unchecked Sendable {
    // @unchecked Sendable: `storage` is read and written only while `lock` is held, so no
    // two threads touch it at once. (A `Mutex<Value>` would insist that Value is Sendable.)
    private let lock = Mutex(())
    private var storage: Value

    public init(_ value: Value) { storage = value }

    public var value: Value {
        get { lock.withLock { _ in storage } }
        set { lock.withLock { _ in storage = newValue } }
    }

    @discardableResult
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try lock.withLock { _ in try body(&storage) }
    }
}

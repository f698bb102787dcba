import Dispatch
import Foundation
import Synchronization
@testable import ZeroMQ

/// A thread for a test: runs `body` once, and can be joined with a deadline so
/// a hang fails the test instead of stalling the run.
final class TestThread: Sendable {
    private let finished = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Void) {
        let finished = self.finished
        let thread = Thread {
            body()
            finished.signal()
        }
        thread.start()
    }

    /// Lets the thread run on without anyone joining it.
    func detach() {}

    /// A one-shot signal between a test and its threads, waited for with a deadline.
    final class Signal: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        func signal() { semaphore.signal() }
        func wait(timeout: Duration = .seconds(10)) -> Bool {
            semaphore.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds) * 1000)) == .success
        }
    }

    /// Whether the thread finished within `timeout`.
    func join(timeout: Duration = .seconds(10)) -> Bool {
        let nanoseconds = Int(timeout.components.seconds) * 1_000_000_000 + Int(timeout.components.attoseconds / 1_000_000_000)
        return finished.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }
}

/// How long tests wait for something that should happen (generous: the
/// machine is shared with builders), and for something that should not.
enum Deadline {
    static let event: Duration = .seconds(10)
    static let silence: Duration = .milliseconds(300)
}

extension Array where Element == UInt8 {
    init(_ string: String) { self = Array(string.utf8) }
}

extension Socket {
    /// Binds to a free loopback TCP port and returns the resolved endpoint.
    func bindLoopback() throws(ZeroMQError) -> String {
        try bind("tcp://127.0.0.1:*")
        return try lastEndpoint
    }
}

/// Measures how long `body` takes.
func elapsed(_ body: () throws -> Void) rethrows -> Duration {
    let start = ContinuousClock.now
    try body()
    return ContinuousClock.now - start
}

/// A value shared with test threads (escaping closures cannot capture a `Mutex` itself).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    var value: Value {
        get { mutex.withLock { $0 } }
        set { mutex.withLock { $0 = newValue } }
    }
    func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

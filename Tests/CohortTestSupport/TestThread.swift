import Dispatch
import Foundation

/// A thread for a test: runs `body` once, and can be joined with a deadline so a hang fails
/// the test instead of stalling the run.
public final class TestThread: Sendable {
    private let finished = DispatchSemaphore(value: 0)

    public init(_ body: @escaping @Sendable () -> Void) {
        let finished = self.finished
        let thread = Thread {
            body()
            finished.signal()
        }
        thread.start()
    }

    /// Lets the thread run on without anyone joining it.
    public func detach() {}

    /// A one-shot signal between a test and its threads, waited for with a deadline.
    public final class Signal: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        public init() {}
        public func signal() { semaphore.signal() }
        public func wait(timeout: Duration = .seconds(10)) -> Bool {
            semaphore.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds) * 1000)) == .success
        }
    }

    /// Whether the thread finished within `timeout`.
    public func join(timeout: Duration = .seconds(10)) -> Bool {
        finished.wait(timeout: .now() + timeout.dispatch) == .success
    }
}

/// Runs `body` on a thread of its own and returns what it returns. A long computation or a
/// blocking call (a simulation run, a socket read) made straight from a test holds one of the
/// cooperative pool's threads, of which a two-core machine has two; tests run in parallel, and
/// two such calls starve every other test's tasks, servers included (a metrics server that
/// never got to answer the read that waited for it).
public func onItsOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// ``onItsOwnThread(_:)`` for a body that throws.
public func onItsOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Whether a process with `pid` still exists (a zombie counts as gone).
public func processExists(_ pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 || errno == EPERM else { return false }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return true }
    let state = stat[stat.index(close, offsetBy: 2)]
    return state != "Z" && state != "X"
}

extension Data {
    /// The JSON text as a value, for comparisons.
    public var json: NSDictionary? {
        (try? JSONSerialization.jsonObject(with: self)) as? NSDictionary
    }
}

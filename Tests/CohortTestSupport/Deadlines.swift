import Dispatch
import Testing

// Waiting for an event with a deadline, never a sleep "to let things settle" (docs/architecture.md, "What is tested where").

/// How long tests wait for something that should happen (generous: the machine is shared with
/// builders, and a passing test never waits this long), and for something that should not.
public enum Deadline {
    public static let event: Duration = .seconds(20)
    public static let silence: Duration = .milliseconds(300)
}

/// Thrown by the waiting helpers when the deadline passes; the test has already recorded an issue.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    public let what: String
    public let timeout: Duration
    public init(what: String, timeout: Duration) {
        self.what = what
        self.timeout = timeout
    }
    public var description: String { "timed out after \(timeout) waiting for \(what)" }
}

/// Runs `operation` as a task of its own and returns its result, or records an issue and throws
/// ``DeadlineExceeded`` if it takes longer than `timeout`. An operation that ignores
/// cancellation (a continuation waiting on the engine, another task's value) cannot hold the
/// test past the limit: on timeout it is left behind, which only happens when the test fails.
public func within<T: Sendable>(
    _ timeout: Duration = Deadline.event, _ what: @autoclosure () -> String = "the operation",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let result: Result<T, any Error>? = await withCheckedContinuation { continuation in
        let once = OnceResumer<Result<T, any Error>?>(continuation)
        Task {
            do { once.resume(.success(try await operation())) } catch { once.resume(.failure(error)) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatch) { once.resume(nil) }
    }
    guard let result else {
        let what = what()
        Issue.record("\(what) did not complete within \(timeout)", sourceLocation: sourceLocation)
        throw DeadlineExceeded(what: what, timeout: timeout)
    }
    return try result.get()
}

/// Polls `condition` until it holds, failing the test (an issue, then ``DeadlineExceeded``) at
/// `deadline`. For state changes that have no event to wait on ("is executing now", "was
/// deallocated", "the process is gone").
public func waitUntil(
    deadline: ContinuousClock.Instant, _ what: @autoclosure () -> String = "the condition",
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () throws -> Bool
) async throws {
    while try !condition() {
        guard ContinuousClock.now < deadline else {
            let what = what()
            Issue.record("\(what) did not hold in time", sourceLocation: sourceLocation)
            throw DeadlineExceeded(what: what, timeout: .zero)
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// ``waitUntil(deadline:_:sourceLocation:_:)`` with a deadline `timeout` from now.
public func waitUntil(
    _ what: @autoclosure () -> String = "the condition", within timeout: Duration = Deadline.event,
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else {
            let what = what()
            Issue.record("\(what) did not hold within \(timeout)", sourceLocation: sourceLocation)
            throw DeadlineExceeded(what: what, timeout: timeout)
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// Whether `condition` comes to hold within `limit` (checked every 10 ms); records nothing, so
/// the caller says what it expected with `#expect(await eventually(…))`.
public func eventually(_ limit: Duration = Deadline.event, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try condition()
}

/// The blocking form of ``eventually(_:_:)``, for tests that drive sockets or processes on the
/// calling thread.
public func eventuallyBlocking(_ limit: Duration = Deadline.event, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        sleepBriefly(.milliseconds(5))
    }
    return try condition()
}

/// Blocks the calling thread for `duration` (a polling interval, never a way to let things settle).
public func sleepBriefly(_ duration: Duration) {
    let semaphore = DispatchSemaphore(value: 0)
    _ = semaphore.wait(timeout: .now() + duration.dispatch)
}

/// Measures how long `body` takes.
public func elapsed(_ body: () throws -> Void) rethrows -> Duration {
    let start = ContinuousClock.now
    try body()
    return ContinuousClock.now - start
}

/// Measures how long `body` takes.
public func elapsed(_ body: () async throws -> Void) async rethrows -> Duration {
    let start = ContinuousClock.now
    try await body()
    return ContinuousClock.now - start
}

extension Duration {
    /// The duration for Dispatch's deadlines.
    public var dispatch: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }

    /// The duration in seconds.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

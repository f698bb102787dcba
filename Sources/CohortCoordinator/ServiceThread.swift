import Foundation

/// Runs a blocking service on a thread of its own for the length of a scope, the way a task
/// group bounds its child tasks: `run` starts on a new thread, `body` runs meanwhile on the
/// calling thread, and when `body` returns or throws, `finish` asks the service to end and
/// the scope waits until `run` has returned. No thread outlives the scope that started it,
/// and no service starts a thread in its `init`.
///
/// `run` must return once `finish` has been called (and may return earlier, on its own).
/// `finish` may be called from any thread and must not block.
func withServiceThread<Result>(
    named name: String, run: @escaping @Sendable () -> Void, finish: () -> Void, _ body: () throws -> Result
) rethrows -> Result {
    let ended = DispatchSemaphore(value: 0)
    let thread = Thread {
        run()
        ended.signal()
    }
    thread.name = name
    thread.start()
    defer {
        finish()
        ended.wait()
    }
    return try body()
}

import Dispatch
import Foundation

/// Turns SIGINT and SIGTERM into a call on a dispatch queue instead of the default exit, so a
/// command can stop gracefully (cancel its service task, stop the processes it started).
///
/// The `exitAfter`-th signal (the second by default) exits at once with 128 + the signal, so
/// an impatient Ctrl-C still works. Keep the trap alive as long as it should catch signals;
/// ``cancel()`` restores the default handling.
final class SignalTrap: @unchecked Sendable {
    // @unchecked: both properties are immutable after init; dispatch sources are thread-safe
    // objects whose `cancel()` may be called from any thread.
    private let sources: [any DispatchSourceSignal]
    private let signals: [Int32]

    /// Starts catching `signals`; `handler` runs on a private queue with the signal's number
    /// and how many signals were caught so far (1 for the first). `repeatable` (e.g. SIGHUP
    /// for a reload): every signal calls `handler`, none exits; otherwise the `exitAfter`-th exits.
    init(
        _ signals: [Int32] = [SIGINT, SIGTERM], repeatable: Bool = false, exitAfter: Int = 2,
        handler: @escaping @Sendable (Int32, Int) -> Void
    ) {
        self.signals = signals
        let queue = DispatchQueue(label: "cohort.signals")
        let seen = SignalCounter()
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let count = seen.increment()
                if !repeatable, count >= exitAfter { exit(128 + number) }
                handler(number, count)
            }
            source.resume()
            return source
        }
    }

    /// Stops catching; the signals' default actions apply again.
    func cancel() {
        for source in sources { source.cancel() }
        for number in signals { signal(number, SIG_DFL) }
    }

    /// `SIGINT`, `SIGTERM` or the number.
    static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}

/// How many signals were caught; touched only on the trap's serial queue.
private final class SignalCounter: @unchecked Sendable {
    // @unchecked: `count` is read and written only from the SignalTrap's serial dispatch queue.
    private var count = 0

    func increment() -> Int {
        count += 1
        return count
    }
}

import CohortWire
import DequeModule
import Foundation

/// What running attempts write, line by line, on its way to the coordinator (docs/operations.md,
/// "Logs").
///
/// Writers (a shell child's I/O thread, a kind's `context.log`) add bytes; the shipper cuts
/// them into lines (at a newline, or at ``maxLineBytes``) numbered from 1 in each attempt. The
/// worker's loop takes lines to send (``take(budget:)``, within its window of bytes sent but
/// not yet acknowledged) and forgets them once the coordinator says it stored them
/// (``acknowledge(_:upTo:)``). A broken connection sends the unacknowledged lines again on the
/// next (``rewind()``); the coordinator ignores a line it already has.
///
/// Backpressure: an attempt holds at most ``maxBufferedBytes`` of lines not yet acknowledged.
/// A writer past it waits (a shell child then blocks on its full pipe) until the coordinator
/// catches up, or the attempt is stopping. Nothing written is dropped.
///
/// Thread-safety: `Sendable`; every member may be called from any thread (state is behind
/// one lock).
final class LogShipper: @unchecked Sendable {
    // @unchecked Sendable: every mutable property is read and written with `condition` held.

    /// A line longer than this is sent in pieces (`partial`).
    static let maxLineBytes = LogLine.maxTextBytes
    /// A line not ended for this long is sent as a piece (`partial`), so a child that stops
    /// mid-line (a prompt, a progress bar, a hang) shows where it stopped.
    static let fragmentAge: Duration = .milliseconds(100)

    private final class Attempt {
        let ref: WireAttemptRef
        var nextSequence: UInt64 = 1
        /// Lines not yet acknowledged, oldest first (sent ones first).
        var lines: Deque<LogLine> = []
        /// How many of ``lines`` were sent on this connection.
        var sent = 0
        var bufferedBytes = 0
        var sentBytes = 0
        /// Bytes of the current line of stdout and stderr, before its newline.
        var fragments: [LogLine.Stream: [UInt8]] = [:]
        /// When ``fragments`` last grew.
        var fragmentAt = ContinuousClock.now
        /// Its writer waits for acknowledgements (its fragment is not stale: it cannot write).
        var writerWaiting = false
        var finished = false

        init(ref: WireAttemptRef) { self.ref = ref }
    }

    private let condition = NSCondition()
    private var attempts: [UInt64: Attempt] = [:]
    /// Attempts in the order they first wrote, so each gets its turn.
    private var order: [UInt64] = []
    private var wakePending = false
    private let wake: @Sendable () -> Void
    let maxBufferedBytes: Int

    /// `wake` tells the loop there are lines to send (called at most once until
    /// ``wakeReceived()``).
    init(maxBufferedBytes: Int = 4 << 20, wake: @escaping @Sendable () -> Void) {
        self.maxBufferedBytes = max(maxBufferedBytes, Self.maxLineBytes)
        self.wake = wake
    }

    /// Adds what an attempt wrote on `stream`; a kind's line (`level`) is one line whatever it
    /// holds. Waits while the attempt holds ``maxBufferedBytes`` not yet acknowledged and
    /// `mayWait()` says so (checked every 100 ms).
    func write(
        _ ref: WireAttemptRef, _ stream: LogLine.Stream, _ bytes: UnsafeRawBufferPointer, level: String = "",
        mayWait: () -> Bool = { true }
    ) {
        let now = WireTimestamp(Date())
        condition.lock()
        let attempt = entry(ref)
        if stream == .kind {
            var start = 0
            repeat {
                let end = min(bytes.count, start + Self.maxLineBytes)
                append(
                    LogLine(
                        sequence: 0, at: now, stream: .kind, text: Array(bytes[start..<end]),
                        partial: end < bytes.count,
                        level: level), to: attempt)
                start = end
            } while start < bytes.count
        } else {
            var fragment = attempt.fragments.removeValue(forKey: stream) ?? []
            for byte in bytes {
                if byte == UInt8(ascii: "\n") {
                    append(LogLine(sequence: 0, at: now, stream: stream, text: fragment), to: attempt)
                    fragment.removeAll(keepingCapacity: true)
                } else {
                    fragment.append(byte)
                    if fragment.count == Self.maxLineBytes {
                        append(
                            LogLine(sequence: 0, at: now, stream: stream, text: fragment, partial: true), to: attempt)
                        fragment.removeAll(keepingCapacity: true)
                    }
                }
            }
            if !fragment.isEmpty {
                attempt.fragments[stream] = fragment
                attempt.fragmentAt = .now
            }
        }
        let notify = !wakePending
        wakePending = true
        condition.unlock()
        if notify { wake() }
        locked {
            while attempt.bufferedBytes > maxBufferedBytes, attempts[ref.id] === attempt, mayWait() {
                attempt.writerWaiting = true
                _ = condition.wait(until: Date(timeIntervalSinceNow: 0.1))
            }
            attempt.writerWaiting = false
        }
    }

    /// The attempt ended: what it wrote without a final newline becomes its last line. Its
    /// lines are forgotten once acknowledged.
    func finish(_ attemptID: UInt64) {
        locked {
            guard let attempt = attempts[attemptID] else { return }
            flushFragments(attempt)
            attempt.finished = true
            forgetIfDone(attempt)
        }
    }

    /// Lines to send, oldest first per attempt, at most `budget` bytes (at least one line when
    /// there is any); `only` restricts it to some attempts (every line of theirs, whatever the
    /// budget: their results are about to be sent, and their lines go first, a line without
    /// its newline as a last `partial` piece). A line not ended for ``fragmentAge``, while its
    /// writer could have written, is taken as a `partial` piece.
    func take(budget: Int, only: Set<UInt64>? = nil) -> [AttemptLogLines] {
        locked {
            var taken: [AttemptLogLines] = []
            var remaining = only == nil ? budget : Int.max
            for id in order {
                guard let attempt = attempts[id], only?.contains(id) ?? true else { continue }
                if only != nil {
                    attempt.finished = true
                    flushFragments(attempt)
                } else if !attempt.writerWaiting, ContinuousClock.now - attempt.fragmentAt >= Self.fragmentAge {
                    flushFragments(attempt)
                }
                var lines: [LogLine] = []
                while attempt.sent < attempt.lines.count, remaining > 0 || (taken.isEmpty && lines.isEmpty) {
                    let line = attempt.lines[attempt.sent]
                    attempt.sent += 1
                    attempt.sentBytes += line.text.count
                    remaining -= line.text.count + 32
                    lines.append(line)
                }
                if !lines.isEmpty { taken.append(AttemptLogLines(ref: attempt.ref, lines: lines)) }
                if remaining <= 0, only == nil { break }
            }
            // The next call starts with the attempts that got nothing this time.
            if let first = taken.first?.ref.id, let index = order.firstIndex(of: first), only == nil {
                order = Array(order[(index + 1)...] + order[...index])
            }
            return taken
        }
    }

    /// When a line not ended yet becomes old enough to send as a piece, if one waits (the
    /// loop wakes then).
    var nextFragmentDeadline: ContinuousClock.Instant? {
        locked {
            attempts.values.filter { !$0.fragments.isEmpty && !$0.writerWaiting }.map {
                $0.fragmentAt + Self.fragmentAge
            }
            .min()
        }
    }

    /// The loop got the wake: the next write wakes it again.
    func wakeReceived() {
        locked { wakePending = false }
    }

    /// Bytes sent but not yet acknowledged, over every attempt.
    var inFlightBytes: Int { locked { attempts.values.reduce(0) { $0 + $1.sentBytes } } }

    /// Whether lines wait to be sent.
    var hasUnsent: Bool {
        locked { attempts.values.contains { $0.sent < $0.lines.count || !$0.fragments.isEmpty } }
    }

    /// The coordinator stored attempt `attemptID`'s lines up to `sequence`.
    func acknowledge(_ attemptID: UInt64, upTo sequence: UInt64) {
        locked {
            guard let attempt = attempts[attemptID] else { return }
            while let first = attempt.lines.first, first.sequence <= sequence {
                attempt.lines.removeFirst()
                attempt.bufferedBytes -= first.text.count
                if attempt.sent > 0 {
                    attempt.sent -= 1
                    attempt.sentBytes -= first.text.count
                }
            }
            forgetIfDone(attempt)
            condition.broadcast()
        }
    }

    /// A new connection: every line not acknowledged is sent again.
    func rewind() {
        locked {
            for attempt in attempts.values {
                attempt.sent = 0
                attempt.sentBytes = 0
            }
        }
    }

    /// Forgets every attempt's lines (the worker is stopping).
    func removeAll() {
        locked {
            attempts = [:]
            order = []
            condition.broadcast()
        }
    }

    // MARK: With the lock held

    private func entry(_ ref: WireAttemptRef) -> Attempt {
        if let attempt = attempts[ref.id] { return attempt }
        let attempt = Attempt(ref: ref)
        attempts[ref.id] = attempt
        order.append(ref.id)
        return attempt
    }

    private func append(_ line: LogLine, to attempt: Attempt) {
        var line = line
        line.sequence = attempt.nextSequence
        attempt.nextSequence += 1
        attempt.bufferedBytes += line.text.count
        attempt.lines.append(line)
    }

    private func flushFragments(_ attempt: Attempt) {
        guard !attempt.fragments.isEmpty else { return }
        let now = WireTimestamp(Date())
        for stream in LogLine.Stream.allCases {
            guard let fragment = attempt.fragments.removeValue(forKey: stream) else { continue }
            append(LogLine(sequence: 0, at: now, stream: stream, text: fragment, partial: true), to: attempt)
        }
    }

    private func forgetIfDone(_ attempt: Attempt) {
        guard attempt.finished, attempt.lines.isEmpty, attempt.fragments.isEmpty else { return }
        attempts[attempt.ref.id] = nil
        order.removeAll { $0 == attempt.ref.id }
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}

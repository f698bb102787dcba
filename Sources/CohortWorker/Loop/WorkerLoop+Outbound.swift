import CohortWire
import Foundation
import Logging
import ZeroMQ

/// What one loop turn has to say to the coordinator, sent together at the end of the turn.
struct Outbox {
    var locks: [LockMessage] = []
    var started: [AttemptStart] = []
    var results: [AttemptResult] = []

    var isEmpty: Bool { locks.isEmpty && started.isEmpty && results.isEmpty }
}

extension WorkerLoop {
    /// The largest batch of results in one message, in output bytes: well under the codec's
    /// frame limit, so a turn with many large outputs becomes several messages.
    static let resultBatchBytes = 4 << 20

    /// Sends what the turn produced: lock messages in the order they were made, one
    /// `started` for attempts still running (a result implies its start), then the results.
    func flush(now: ContinuousClock.Instant) {
        guard session.isReady, !outbox.isEmpty else { return }
        let outbox = self.outbox
        self.outbox = Outbox()
        for message in outbox.locks {
            switch message {
            case .request(let request): send(.worker(.lockRequest(request)), now: now)
            case .withdraw(let id): send(.worker(.lockWithdraw(requestID: id)), now: now)
            case .release(let id): send(.worker(.lockRelease(requestID: id)), now: now)
            }
        }
        if !outbox.started.isEmpty {
            let finished = Set(outbox.results.map(\.ref.id))
            let started = outbox.started.filter { !finished.contains($0.ref.id) }
            if !started.isEmpty { send(.worker(.started(started)), now: now) }
        }
        var batch: [AttemptResult] = []
        var bytes = 0
        for result in outbox.results {
            let result = Self.bounded(result, limit: codec.maxFrameSize - 4096)
            let size = Self.size(of: result)
            if !batch.isEmpty, bytes + size > Self.resultBatchBytes {
                send(.worker(.results(batch)), now: now)
                batch = []
                bytes = 0
            }
            batch.append(result)
            bytes += size
        }
        if !batch.isEmpty { send(.worker(.results(batch)), now: now) }
    }

    /// Encodes and sends `message`; a message the socket cannot take now waits in `blocked`.
    func send(_ message: WireMessage, now: ContinuousClock.Instant) {
        guard let socket else { return }
        let frames: [[UInt8]]
        do {
            frames = try codec.encode(message)
        } catch {
            logger.error("cannot encode a message for the coordinator", metadata: ["error": "\(error)"])
            return
        }
        guard blocked.isEmpty else {
            blocked.append(frames)
            return
        }
        do {
            if try !socket.send(frames, wait: .never) {
                blocked.append(frames)
                watchWritable(true)
            }
        } catch {
            logger.error("sending to the coordinator failed", metadata: ["error": "\(error)"])
            perform([.disconnect(reason: "send failed: \(error)")], now: now)
        }
    }

    /// Sends what waited for the socket to become writable.
    func sendBlocked() {
        guard let socket else { return }
        while let frames = blocked.first {
            do {
                guard try socket.send(frames, wait: .never) else { return }
            } catch {
                logger.error("sending to the coordinator failed", metadata: ["error": "\(error)"])
                perform([.disconnect(reason: "send failed: \(error)")], now: .now)
                return
            }
            blocked.removeFirst()
        }
        watchWritable(false)
    }

    private func watchWritable(_ watch: Bool) {
        guard let socketIndex else { return }
        poller.setEvents(watch ? [.readable, .writable] : .readable, at: socketIndex)
    }

    private static func size(of result: AttemptResult) -> Int {
        switch result.outcome {
        case .succeeded(let output): output.count + 64
        case .failed(let error): error.utf8.count + 64
        case .cancelled(let reason, _): reason.utf8.count + 64
        }
    }

    /// The result, or a failure saying its output was too large to send.
    private static func bounded(_ result: AttemptResult, limit: Int) -> AttemptResult {
        guard case .succeeded(let output) = result.outcome, output.count > limit else { return result }
        var bounded = result
        bounded.outcome = .failed(error: "output too large: \(output.count) bytes, over the limit of \(limit)")
        return bounded
    }
}

import CohortWire
import Foundation
import Logging
import ZeroMQ

extension WorkerLoop {
    /// The largest batch of results in one message, in output bytes: well under the codec's
    /// frame limit, so a turn with many large outputs becomes several messages.
    static let resultBatchBytes = 4 << 20

    /// Sends one of the machine's messages; results go in batches of at most
    /// ``resultBatchBytes`` of output, each bounded by the codec's frame limit.
    func send(_ message: Machine.Message) {
        switch message {
        case .ready(let sessionID, let held, let draining):
            let running = held.map { RunningAttempt(ref: $0.order.ref, startedAt: $0.start?.startedAt) }
            send(
                .worker(
                    .ready(
                        WorkerReady(
                            name: configuration.name, host: configuration.host, sessionID: sessionID,
                            labels: configuration.labels, slots: UInt32(configuration.slots),
                            kinds: registry.kindNames, running: running, draining: draining))))
        case .heartbeat(let sequence):
            send(.worker(.heartbeat(sequence: sequence)))
        case .draining(let stopping):
            send(.worker(.draining(reason: "worker \(configuration.name) is \(stopping ? "stopping" : "draining")")))
        case .lockRequest(let request):
            send(.worker(.lockRequest(request)))
        case .lockWithdraw(let requestID):
            send(.worker(.lockWithdraw(requestID: requestID)))
        case .lockRelease(let requestID):
            send(.worker(.lockRelease(requestID: requestID)))
        case .started(let starts):
            send(.worker(.started(starts)))
        case .results(let results):
            // An attempt's last lines go before its result, so a reader that sees it ended
            // has every line (the coordinator stores them in the order they come).
            sendLogLines(logs.take(budget: 0, only: Set(results.map(\.ref.id))))
            var batch: [AttemptResult] = []
            var bytes = 0
            for result in results {
                let result = Self.bounded(result, limit: codec.maxFrameSize - 4096)
                let size = Self.size(of: result)
                if !batch.isEmpty, bytes + size > Self.resultBatchBytes {
                    send(.worker(.results(batch)))
                    batch = []
                    bytes = 0
                }
                batch.append(result)
                bytes += size
            }
            if !batch.isEmpty { send(.worker(.results(batch))) }
        case .disconnect(let handedBack):
            let reason =
                handedBack == 0
                ? "worker \(configuration.name) stopped"
                : "worker \(configuration.name) stopped; \(handedBack) \(handedBack == 1 ? "attempt" : "attempts") handed back"
            send(.worker(.disconnect(reason: reason)))
        }
    }

    /// The most bytes of log lines sent and not yet acknowledged (docs/operations.md, "Logs").
    static let logWindowBytes = 1 << 20
    /// The most bytes of log lines in one message.
    static let logMessageBytes = 256 << 10

    /// Sends the log lines the window allows, while a session is up.
    func shipLogs() {
        guard machine.session.isReady, logs.hasUnsent else { return }
        while true {
            let room = Self.logWindowBytes - logs.inFlightBytes
            guard room > 0 else { return }
            let lines = logs.take(budget: min(room, Self.logMessageBytes))
            guard !lines.isEmpty else { return }
            sendLogLines(lines)
        }
    }

    private func sendLogLines(_ attempts: [AttemptLogLines]) {
        guard !attempts.isEmpty else { return }
        // In pieces well under the codec's frame limit.
        var batch: [AttemptLogLines] = []
        var bytes = 0
        for attempt in attempts {
            var lines: [LogLine] = []
            for line in attempt.lines {
                if bytes + line.text.count > Self.resultBatchBytes, !(batch.isEmpty && lines.isEmpty) {
                    if !lines.isEmpty { batch.append(AttemptLogLines(ref: attempt.ref, lines: lines)) }
                    send(.worker(.logLines(batch)))
                    (batch, lines, bytes) = ([], [], 0)
                }
                lines.append(line)
                bytes += line.text.count + 32
            }
            if !lines.isEmpty { batch.append(AttemptLogLines(ref: attempt.ref, lines: lines)) }
        }
        if !batch.isEmpty { send(.worker(.logLines(batch))) }
    }

    /// Encodes and sends `message`; a message the socket cannot take now waits in `blocked`.
    func send(_ message: WireMessage) {
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
            perform(machine.connectionFailed(now: clock.now(), reason: "send failed: \(error)"))
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
                perform(machine.connectionFailed(now: clock.now(), reason: "send failed: \(error)"))
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

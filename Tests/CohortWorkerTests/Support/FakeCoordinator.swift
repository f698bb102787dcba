import CohortTestSupport
import CohortWire
import Dispatch
import Foundation
import Synchronization
import ZeroMQ

/// A coordinator for tests: a raw ZeroMQ ROUTER on `tcp://127.0.0.1:*`, on a thread of its
/// own, speaking CohortWire through `WireCodec`.
///
/// It welcomes every worker HELLO (unless told not to), heartbeats the last welcomed worker
/// every interval so it never looks lost, and records every message it receives in
/// ``inbox``. Tests send through ``send(_:)``, which goes to the last worker that said HELLO.
final class FakeCoordinator: Sendable {
    struct Received: Sendable {
        let routingID: [UInt8]
        let message: WireMessage
    }

    enum Command: Sendable {
        case send(WireMessage)
        case sendRaw([[UInt8]])
        case stop
    }

    /// The resolved endpoint, e.g. `tcp://127.0.0.1:41234`.
    let endpoint: String
    let inbox = AsyncInbox<Received>()
    private let commands: Mailbox<Command>
    private let finished = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - welcome: answer worker HELLOs with WELCOME.
    ///   - heartbeat: send a heartbeat to the welcomed worker every `interval`.
    init(welcome: Bool = true, heartbeat: Bool = true, interval: Duration = .seconds(1), liveness: UInt32 = 3) throws {
        let commands = try Mailbox<Command>()
        self.commands = commands
        let bound = Locked<Result<String, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let (inbox, finished) = (self.inbox, self.finished)
        let thread = Thread {
            defer { finished.signal() }
            let codec = WireCodec()
            let context: Context
            let router: Socket
            do {
                context = try Context()
                router = try context.socket(.router)
                try router.set(.routerMandatory, to: true)
                try router.bind("tcp://127.0.0.1:*")
                bound.value = .success(try router.lastEndpoint)
            } catch {
                bound.value = .failure(error)
                ready.signal()
                return
            }
            ready.signal()
            let poller = Poller()
            let routerIndex = try! poller.register(router)
            let commandIndex = poller.register(commands.waker)
            var peer: [UInt8]?
            var peers = 0
            var lastHeartbeat = ContinuousClock.now
            func send(_ message: WireMessage) {
                guard let peer, let frames = try? codec.encode(message) else { return }
                _ = try? router.send(to: peer, frames, wait: .upTo(.seconds(1)))
            }
            loop: while true {
                do { try poller.poll(timeout: interval) } catch { break }
                if poller.isReadable(routerIndex) {
                    while let frames = try? router.receiveFrames(wait: .never) {
                        let id = frames[0]
                        guard let message = try? codec.decode(frames: Array(frames.dropFirst())) else { continue }
                        if case .handshake(.hello(let hello)) = message, hello.role == .worker { peer = id }
                        if welcome, case .handshake(.hello(let hello)) = message, hello.role == .worker {
                            peers += 1
                            send(.handshake(.welcome(Welcome(
                                coordinatorID: "fake", epoch: 1, peerID: "w-\(peers)", heartbeatInterval: interval,
                                heartbeatLiveness: liveness, softwareVersion: "test"))))
                        }
                        inbox.post(Received(routingID: id, message: message))
                    }
                }
                if poller.isReadable(commandIndex) {
                    for command in commands.drain() {
                        switch command {
                        case .send(let message): send(message)
                        case .sendRaw(let frames):
                            if let peer { _ = try? router.send(to: peer, frames, wait: .upTo(.seconds(1))) }
                        case .stop: break loop
                        }
                    }
                }
                if heartbeat, ContinuousClock.now - lastHeartbeat >= interval {
                    lastHeartbeat = .now
                    send(.toWorker(.heartbeat))
                }
            }
            router.close()
            context.terminate()
        }
        thread.name = "fake-coordinator"
        thread.start()
        ready.wait()
        endpoint = try bound.value!.get()
    }

    /// Sends `message` to the last worker that said HELLO.
    func send(_ message: CoordinatorToWorker) {
        commands.post(.send(.toWorker(message)))
    }

    /// Sends any wire message (a handshake error, …) to the last worker that said HELLO.
    func send(wire message: WireMessage) {
        commands.post(.send(message))
    }

    /// Stops the fake and waits for its thread to close the socket.
    func stop() {
        commands.post(.stop)
        _ = finished.wait(timeout: .now() + 10)
    }

    // MARK: Waiting for what the worker says

    /// The next worker HELLO.
    func hello(timeout: Duration = Deadline.event) async throws -> Hello {
        let received = try await inbox.take("HELLO", timeout: timeout) {
            if case .handshake(.hello) = $0.message { true } else { false }
        }
        guard case .handshake(.hello(let hello)) = received.message else { fatalError() }
        return hello
    }

    /// The next READY.
    func ready(timeout: Duration = Deadline.event) async throws -> WorkerReady {
        try await workerMessage("READY", timeout: timeout) { if case .ready(let ready) = $0 { ready } else { nil } }
    }

    /// The result of the attempt `attemptID`, from whichever results batch carries it.
    func result(_ attemptID: UInt64, timeout: Duration = Deadline.event) async throws -> AttemptResult {
        let received = try await inbox.take("the result of task \(attemptID)", timeout: timeout) {
            if case .worker(.results(let results)) = $0.message { results.contains { $0.ref.id == attemptID } } else { false }
        }
        guard case .worker(.results(let results)) = received.message else { fatalError() }
        // Put the batch's other results back for later waits.
        let others = results.filter { $0.ref.id != attemptID }
        if !others.isEmpty { inbox.post(Received(routingID: received.routingID, message: .worker(.results(others)))) }
        return results.first { $0.ref.id == attemptID }!
    }

    /// The first worker message that `extract` turns into a value.
    func workerMessage<T: Sendable>(
        _ what: String, timeout: Duration = Deadline.event, _ extract: @escaping @Sendable (WorkerMessage) -> T?
    ) async throws -> T {
        let received = try await inbox.take(what, timeout: timeout) {
            if case .worker(let message) = $0.message { extract(message) != nil } else { false }
        }
        guard case .worker(let message) = received.message else { fatalError() }
        return extract(message)!
    }

    /// Whether the worker ever sent a result for `attemptID`.
    func sawResult(_ attemptID: UInt64) -> Bool {
        inbox.contains {
            if case .worker(.results(let results)) = $0.message { results.contains { $0.ref.id == attemptID } } else { false }
        }
    }
}

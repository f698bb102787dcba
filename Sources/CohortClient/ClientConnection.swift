import CohortWire
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// The client's I/O side: one DEALER socket, owned by one thread (`ClientLoop`).
///
/// Callers (any task, any thread) post ``Command``s through a ``Mailbox``; the loop thread sends
/// them, routes every reply to the responder of its request id, and times requests out. No
/// Swift concurrency pool thread ever blocks in `zmq_poll`.
final class ClientConnection: Sendable {
    /// What the loop delivers a request's answers to.
    enum Responder: Sendable {
        /// One answer; the continuation is resumed exactly once.
        case reply(CheckedContinuation<CoordinatorReply.Kind, any Error>)
        /// A stream of answers (a watch), finished after the group's last event.
        case stream(AsyncThrowingStream<CoordinatorReply.Kind, any Error>.Continuation)
    }

    /// Work for the loop thread.
    enum Command: Sendable {
        case request(id: UInt64, ClientRequest.Kind, Responder)
        /// The caller stopped listening to a watch: forget it and tell the coordinator.
        case unwatch(id: UInt64, group: String)
        /// The caller's task was cancelled: answer its request with ``ClientError/Code/cancelled``.
        case abandon(id: UInt64)
        /// Say goodbye, close the socket and end the thread; resumes when done.
        case close(CheckedContinuation<Void, Never>)
    }

    let configuration: ClientConfiguration
    private let inbox: ClientInbox
    /// Request ids are chosen here, so a caller knows its id before the loop sees the request.
    private let nextID = Atomic<UInt64>(1)

    private init(configuration: ClientConfiguration, inbox: ClientInbox) {
        self.configuration = configuration
        self.inbox = inbox
    }

    /// Starts the loop thread, connects and completes the handshake.
    /// - Throws: ``ClientError`` `unreachable` when no WELCOME arrives within the connect
    ///   timeout, `protocolMismatch`/`permissionDenied` when the coordinator refuses.
    static func open(_ configuration: ClientConfiguration, logger: Logger) async throws(ClientError) -> (
        ClientConnection, Welcome
    ) {
        let inbox: ClientInbox
        do {
            inbox = try ClientInbox()
        } catch {
            throw ClientError(.internal, "cannot create the client's mailbox: \(error)")
        }
        let connection = ClientConnection(configuration: configuration, inbox: inbox)
        let result: Result<Welcome, ClientError> = await withCheckedContinuation { handshake in
            let thread = Thread {
                ClientLoop(configuration: configuration, inbox: inbox, logger: logger).run(handshake: handshake)
            }
            thread.name = "cohort-client"
            thread.start()
        }
        return (connection, try result.get())
    }

    /// A fresh request id (never 0, which marks unsolicited replies).
    func makeRequestID() -> UInt64 {
        nextID.add(1, ordering: .relaxed).oldValue
    }

    /// Sends a request and waits for its one answer; a coordinator `error` reply is thrown.
    func request(_ kind: ClientRequest.Kind) async throws(ClientError) -> CoordinatorReply.Kind {
        let id = makeRequestID()
        let reply: CoordinatorReply.Kind
        do {
            let inbox = self.inbox
            reply = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    if !inbox.post(.request(id: id, kind, .reply(continuation))) {
                        continuation.resume(throwing: inbox.endedWith)
                    }
                }
            } onCancel: {
                _ = inbox.post(.abandon(id: id))
            }
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(.internal, "\(error)")
        }
        if case .error(let error) = reply { throw ClientError(error) }
        return reply
    }

    /// Starts a watch: the snapshot, then batches of events, until the group finishes.
    /// Ending the iteration early unwatches.
    func watch(group: String) -> AsyncThrowingStream<CoordinatorReply.Kind, any Error> {
        let id = makeRequestID()
        let (stream, continuation) = AsyncThrowingStream<CoordinatorReply.Kind, any Error>.makeStream()
        let inbox = self.inbox
        continuation.onTermination = { termination in
            if case .cancelled = termination { _ = inbox.post(.unwatch(id: id, group: group)) }
        }
        if !inbox.post(.request(id: id, .watch(group: group), .stream(continuation))) {
            continuation.finish(throwing: inbox.endedWith)
        }
        return stream
    }

    /// Disconnects and waits for the loop thread to end. Idempotent.
    func close() async {
        await withCheckedContinuation { continuation in
            if !inbox.post(.close(continuation)) { continuation.resume() }
        }
    }
}

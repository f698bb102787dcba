import Synchronization
import ZeroMQ

/// The loop thread's inbox: a ``Mailbox`` that refuses posts once the loop has ended.
///
/// Without the gate, a command posted after the loop's last drain would wait forever. Posts
/// and the loop's final ``seal()`` take the same lock, so every command is either drained by
/// the loop (which answers it) or refused here (the poster answers it).
final class ClientInbox: Sendable {
    let mailbox: Mailbox<ClientConnection.Command>
    private let sealed = Mutex(false)
    /// Why the loop ended, for commands refused afterwards.
    private let ending = Mutex<ClientError?>(nil)

    init() throws(ZeroMQError) {
        mailbox = try Mailbox()
    }

    /// The waker to register with the loop's poller.
    var waker: Waker { mailbox.waker }

    /// Queues `command` for the loop; `false` if the loop has ended (the command was not queued).
    func post(_ command: ClientConnection.Command) -> Bool {
        sealed.withLock { sealed in
            guard !sealed else { return false }
            mailbox.post(command)
            return true
        }
    }

    /// Every command posted so far, oldest first.
    func drain() -> [ClientConnection.Command] {
        mailbox.drain()
    }

    /// Why a refused command cannot be served: what ended the loop (the coordinator refused
    /// the client, …), or ``ClientError/closed``.
    var endedWith: ClientError { ending.withLock { $0 } ?? .closed }

    /// Refuses further posts, remembering `reason`, and returns what was still queued.
    func seal(reason: ClientError) -> [ClientConnection.Command] {
        ending.withLock { $0 = reason }
        return sealed.withLock { sealed in
            sealed = true
            return mailbox.drain()
        }
    }
}

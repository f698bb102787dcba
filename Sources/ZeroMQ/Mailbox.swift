import Synchronization

/// A queue that any thread can post to and a socket-owning loop drains, with a ``Waker``.
///
/// This is the hand-off docs/architecture.md asks for: sockets stay on their thread,
/// and other threads post work here instead of touching them. Register
/// ``waker`` with the loop's ``Poller``; when it is readable, call ``drain()``.
///
/// Thread-safety: `Sendable`. ``post(_:)`` from any thread; ``drain()`` from the
/// loop's thread (it is safe from any thread, but only the loop's wakes make
/// sense). Elements are kept behind a `Mutex`.
public final class Mailbox<Element: Sendable>: Sendable {
    /// The waker to register with the loop's poller.
    public let waker: Waker
    private let queue = Mutex<[Element]>([])

    /// Creates an empty mailbox.
    ///
    /// Thread-safety: any thread. Throws ``ZeroMQError`` as ``Waker/init()``.
    public init() throws(ZeroMQError) {
        waker = try Waker()
    }

    /// Adds `element` and wakes the loop if it may be asleep.
    ///
    /// Only a post to an empty queue wakes: a non-empty queue means an earlier
    /// post has woken (or will wake) the loop, and ``drain()`` takes
    /// everything. Thread-safety: any thread. Throws nothing.
    public func post(_ element: sending Element) {
        let wasEmpty = queue.withLock { queue in
            queue.append(element)
            return queue.count == 1
        }
        if wasEmpty { waker.wake() }
    }

    /// Takes every posted element, oldest first.
    ///
    /// Clears the waker before taking the queue, so a post racing with the
    /// drain either lands in this batch or leaves the waker set for the next
    /// poll; nothing is ever stranded. Thread-safety: the loop's thread. Throws nothing.
    public func drain() -> [Element] {
        waker.reset()
        return queue.withLock { queue in
            let taken = queue
            queue = []
            return taken
        }
    }
}

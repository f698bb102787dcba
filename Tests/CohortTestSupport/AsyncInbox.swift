import Dispatch
import Synchronization

/// Items posted by any thread, taken by tests that wait for the first one matching a
/// predicate, with a deadline (never a sleep to let things settle).
///
/// Two ways to take: ``take(_:timeout:where:)`` awaits the first matching item and leaves the
/// others queued; ``next(timeout:)`` blocks the calling thread for the oldest item (for tests
/// that read a peer in order, skipping what they do not expect).
public final class AsyncInbox<Item: Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let predicate: @Sendable (Item) -> Bool
        let continuation: CheckedContinuation<Item, any Error>
    }

    private struct State {
        var items: [Item] = []
        var history: [Item] = []
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        /// Blocked ``next(timeout:)`` callers, woken by every post.
        var blocked: [DispatchSemaphore] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Every item ever posted, in order (taken or not).
    public var history: [Item] { state.withLock { $0.history } }

    public func post(_ item: Item) {
        let (waiter, blocked) = state.withLock { state -> (Waiter?, [DispatchSemaphore]) in
            state.history.append(item)
            if let index = state.waiters.firstIndex(where: { $0.predicate(item) }) {
                return (state.waiters.remove(at: index), [])
            }
            state.items.append(item)
            defer { state.blocked = [] }
            return (nil, state.blocked)
        }
        waiter?.continuation.resume(returning: item)
        for semaphore in blocked { semaphore.signal() }
    }

    /// The first item (already posted or still to come) for which `predicate` holds; removes it.
    ///
    /// - Throws: ``DeadlineExceeded`` naming `what` if none comes within `timeout`.
    public func take(
        _ what: String, timeout: Duration = Deadline.event, where predicate: @escaping @Sendable (Item) -> Bool
    ) async throws -> Item {
        try await withThrowingTaskGroup(of: Item.self) { group in
            group.addTask { try await self.wait(for: predicate) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw DeadlineExceeded(what: what, timeout: timeout)
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// The oldest item not taken yet, waiting for one up to `timeout` (blocking the calling
    /// thread); nil if none comes.
    public func next(timeout: Duration) -> Item? {
        let deadline = DispatchTime.now() + timeout.dispatch
        while true {
            let semaphore = DispatchSemaphore(value: 0)
            let item = state.withLock { state -> Item? in
                if !state.items.isEmpty { return state.items.removeFirst() }
                state.blocked.append(semaphore)
                return nil
            }
            if let item { return item }
            if semaphore.wait(timeout: deadline) == .timedOut {
                return state.withLock { state -> Item? in
                    state.blocked.removeAll { $0 === semaphore }
                    return state.items.isEmpty ? nil : state.items.removeFirst()
                }
            }
        }
    }

    /// Whether an item for which `predicate` holds was ever posted.
    public func contains(where predicate: (Item) -> Bool) -> Bool {
        state.withLock { $0.history.contains(where: predicate) }
    }

    private func wait(for predicate: @escaping @Sendable (Item) -> Bool) async throws -> Item {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<Item, any Error>? in
                    if let index = state.items.firstIndex(where: predicate) {
                        return .success(state.items.remove(at: index))
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters.append(Waiter(id: id, predicate: predicate, continuation: continuation))
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }
}

import Synchronization

/// Items posted by any thread, taken by tests that wait for the first one matching a
/// predicate, with a deadline (never a sleep to let things settle).
final class AsyncInbox<Item: Sendable>: Sendable {
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
    }

    private let state = Mutex(State())

    /// Every item ever posted, in order (taken or not).
    var history: [Item] { state.withLock { $0.history } }

    func post(_ item: Item) {
        let waiter = state.withLock { state -> Waiter? in
            state.history.append(item)
            if let index = state.waiters.firstIndex(where: { $0.predicate(item) }) {
                return state.waiters.remove(at: index)
            }
            state.items.append(item)
            return nil
        }
        waiter?.continuation.resume(returning: item)
    }

    /// The first item (already posted or still to come) for which `predicate` holds; removes it.
    ///
    /// - Throws: ``InboxTimeout`` naming `what` if none comes within `timeout`.
    func take(
        _ what: String, timeout: Duration = .seconds(10), where predicate: @escaping @Sendable (Item) -> Bool
    ) async throws -> Item {
        try await withThrowingTaskGroup(of: Item.self) { group in
            group.addTask { try await self.wait(for: predicate) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw InboxTimeout(what: what, timeout: timeout)
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// Whether an item for which `predicate` holds was ever posted.
    func contains(where predicate: (Item) -> Bool) -> Bool {
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
                    if let index = state.items.firstIndex(where: predicate) { return .success(state.items.remove(at: index)) }
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

/// Nothing matching came in time.
struct InboxTimeout: Error, CustomStringConvertible {
    let what: String
    let timeout: Duration
    var description: String { "timed out after \(timeout) waiting for \(what)" }
}

import Synchronization

/// The exclusivity requests one procedure has made, so that a cancelled waiter withdraws
/// exactly its own pending request and a finished holder releases exactly its own grants.
final class ExclusivityHold: Sendable {
    private struct Entry {
        let manager: any ExclusivityManager
        var id: ExclusivityRequestID?
        var granted = false
        var withdrawn = false
    }

    private let entries = Mutex<[Entry]>([])

    /// Requests `categories` and waits for the grant; nil if withdrawn (cancelled) first.
    func acquire(_ categories: Set<String>, from manager: any ExclusivityManager, for procedure: Procedure) async
        -> ExclusivityGrant?
    {
        let index = entries.withLock { entries in
            entries.append(Entry(manager: manager))
            return entries.count - 1
        }
        let grant: ExclusivityGrant? = await withCheckedContinuation { continuation in
            let id = manager.request(categories, for: procedure) { [self] grant in
                if grant != nil { entries.withLock { $0[index].granted = true } }
                continuation.resume(returning: grant)
            }
            // A cancel that came before the id was known marked the entry; withdraw it now.
            let withdrawNow = entries.withLock { entries -> Bool in
                entries[index].id = id
                return entries[index].withdrawn && !entries[index].granted
            }
            if withdrawNow { manager.withdraw(id) } else if procedure.isCancelled { withdrawWaiting() }
        }
        return grant
    }

    /// Withdraws every request that has not been granted.
    func withdrawWaiting() {
        let toWithdraw = entries.withLock { entries -> [(any ExclusivityManager, ExclusivityRequestID)] in
            var result: [(any ExclusivityManager, ExclusivityRequestID)] = []
            for index in entries.indices where !entries[index].granted && !entries[index].withdrawn {
                entries[index].withdrawn = true
                if let id = entries[index].id { result.append((entries[index].manager, id)) }
            }
            return result
        }
        for (manager, id) in toWithdraw { manager.withdraw(id) }
    }

    /// Releases every grant (and withdraws anything still waiting), once.
    func releaseAll() {
        let taken = entries.withLock { entries in
            defer { entries = [] }
            return entries
        }
        for entry in taken {
            guard let id = entry.id else { continue }
            if entry.granted { entry.manager.release(id) } else if !entry.withdrawn { entry.manager.withdraw(id) }
        }
    }
}

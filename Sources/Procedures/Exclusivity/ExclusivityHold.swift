import Synchronization

/// The exclusivity requests one procedure has made, so that a cancelled waiter withdraws
/// exactly its own pending request and a finished holder releases exactly its own grants.
final class ExclusivityHold: Sendable {
    private struct Entry {
        let manager: any ExclusivityManager
        var id: ExclusivityRequestID?
        var granted = false
        var withdrawn = false
        /// An answer that came before `manager.request` returned the id, held back until
        /// the id is recorded (else the procedure could run, finish and release its grants
        /// before the grant's id was known, leaking it).
        var early: ExclusivityGrant??
    }

    private struct Entries {
        var byKey: [Int: Entry] = [:]
        var nextKey = 0
    }

    private let entries = Mutex(Entries())

    /// Requests `categories` and waits for the grant; nil if withdrawn (cancelled) first.
    func acquire(_ categories: Set<String>, from manager: any ExclusivityManager, for procedure: Procedure) async
        -> ExclusivityGrant?
    {
        await withCheckedContinuation { continuation in
            request(categories, from: manager, for: procedure) { continuation.resume(returning: $0) }
        }
    }

    /// Requests `categories`; `completion` gets the grant, or nil if the request was
    /// withdrawn (cancelled) first. It may run before this returns, but only once the
    /// request's id is recorded.
    func request(
        _ categories: Set<String>, from manager: any ExclusivityManager, for procedure: Procedure,
        completion: @escaping @Sendable (ExclusivityGrant?) -> Void
    ) {
        let key = entries.withLock { entries in
            defer { entries.nextKey += 1 }
            entries.byKey[entries.nextKey] = Entry(manager: manager)
            return entries.nextKey
        }
        let id = manager.request(categories, for: procedure) { [self] grant in
            let now = entries.withLock { entries -> Bool in
                guard entries.byKey[key] != nil else { return true }
                if grant != nil { entries.byKey[key]!.granted = true }
                if entries.byKey[key]!.id == nil {
                    entries.byKey[key]!.early = .some(grant)
                    return false
                }
                return true
            }
            if now { completion(grant) }
        }
        // A cancel that came before the id was known marked the entry; withdraw it now.
        let (early, withdrawNow) = entries.withLock { entries -> (ExclusivityGrant??, Bool) in
            guard var entry = entries.byKey[key] else { return (nil, false) }
            entry.id = id
            let early = entry.early
            entry.early = nil
            entries.byKey[key] = entry
            return (early, entry.withdrawn && !entry.granted)
        }
        if let early {
            completion(early)
        } else if withdrawNow {
            manager.withdraw(id)
        } else if procedure.isCancelled {
            withdrawWaiting()
        }
    }

    /// Withdraws every request that has not been granted.
    func withdrawWaiting() {
        let toWithdraw = entries.withLock { entries -> [(any ExclusivityManager, ExclusivityRequestID)] in
            var result: [(any ExclusivityManager, ExclusivityRequestID)] = []
            for key in entries.byKey.keys {
                guard let entry = entries.byKey[key], !entry.granted, !entry.withdrawn else { continue }
                entries.byKey[key]!.withdrawn = true
                if let id = entry.id { result.append((entry.manager, id)) }
            }
            return result
        }
        for (manager, id) in toWithdraw { manager.withdraw(id) }
    }

    /// Releases every grant (and withdraws anything still waiting), once.
    func releaseAll() {
        let taken = entries.withLock { entries in
            defer { entries.byKey = [:] }
            return Array(entries.byKey.values)
        }
        for entry in taken {
            guard let id = entry.id else { continue }
            if entry.granted { entry.manager.release(id) } else if !entry.withdrawn { entry.manager.withdraw(id) }
        }
    }
}

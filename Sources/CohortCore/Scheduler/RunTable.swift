/// The scheduler's groups by run index.
///
/// Reading a group through the subscript borrows it where a dictionary's getter copies it: a
/// ``GroupRun`` holds a dozen arrays and strings, so each `runs[runIndex]?.children[leaf]` read
/// through a dictionary retained and released every one of them (about a tenth of the
/// coordinator's time per result, profiled). Writing through it (`runs[runIndex]?.x = y`)
/// changes the group in place, as a dictionary's does.
///
/// Nothing force-unwraps a lookup: a group can be forgotten (`finishedGroupRetention`) while
/// messages about it are still on their way, so every access either chains (`runs[i]?.x = y`
/// writes in place and does nothing for a group that is gone) or binds the one field it
/// needs with `guard let … else { return }`. Binding a whole `GroupRun` (`if let run =
/// runs[i]`) copies it; the hot path never does.
struct RunTable: Sendable {
    /// Slot → position in `storage`.
    private var positions: [Int: Int] = [:]
    private var storage: [GroupRun?] = []
    /// Positions of removed groups, reused first.
    private var free: [Int] = []

    /// How many groups it holds.
    var count: Int { positions.count }

    /// Every group, in no particular order.
    var values: [GroupRun] { storage.compactMap { $0 } }

    subscript(runIndex: Int) -> GroupRun? {
        _read {
            if let position = positions[runIndex] {
                yield storage[position]
            } else {
                yield nil
            }
        }
        _modify {
            if let position = positions[runIndex] {
                yield &storage[position]
                if storage[position] == nil {
                    positions[runIndex] = nil
                    free.append(position)
                }
            } else {
                var added: GroupRun? = nil
                yield &added
                if let added { insert(added, at: runIndex) }
            }
        }
    }

    /// Removes the group in `runIndex` and returns it, if there is one.
    mutating func removeValue(forKey runIndex: Int) -> GroupRun? {
        guard let position = positions.removeValue(forKey: runIndex) else { return nil }
        defer {
            storage[position] = nil
            free.append(position)
        }
        return storage[position]
    }

    private mutating func insert(_ run: GroupRun, at runIndex: Int) {
        if let position = free.popLast() {
            storage[position] = run
            positions[runIndex] = position
        } else {
            positions[runIndex] = storage.count
            storage.append(run)
        }
    }
}

/// Something the scheduler must do at a time: a retry's backoff ending, a group's deadline.
enum TimerEvent: Hashable, Sendable {
    /// Start the next attempt of a leaf whose attempt `attempt` failed.
    case retry(runIndex: Int, leaf: Int, attempt: UInt32)
    /// A group (index in its flat spec) reaches its timeout.
    case groupTimeout(runIndex: Int, group: Int)
}

/// A binary min-heap of timers. Cancelled timers are not removed: the scheduler checks on
/// firing whether the timer still applies.
struct TimerHeap: Sendable {
    private var items: [(at: Timestamp, sequence: UInt64, event: TimerEvent)] = []
    private var sequence: UInt64 = 0

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    /// The earliest timer's time.
    var next: Timestamp? { items.first?.at }

    mutating func schedule(_ event: TimerEvent, at time: Timestamp) {
        sequence += 1
        items.append((time, sequence, event))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(child, parent) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    /// Rewrites every timer's event with `rename` (a growing group's indexes moved); times and
    /// their order stay, so the heap stays a heap.
    mutating func renameEvents(_ rename: (TimerEvent) -> TimerEvent) {
        for index in items.indices { items[index].event = rename(items[index].event) }
    }

    /// Removes and returns the earliest timer due at `now`, if any.
    mutating func popDue(now: Timestamp) -> TimerEvent? {
        guard let first = items.first, first.at <= now else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < items.count, less(left, smallest) { smallest = left }
                if right < items.count, less(right, smallest) { smallest = right }
                if smallest == parent { break }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first.event
    }

    private func less(_ a: Int, _ b: Int) -> Bool {
        items[a].at < items[b].at || (items[a].at == items[b].at && items[a].sequence < items[b].sequence)
    }
}

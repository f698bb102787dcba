import CohortClient

/// The text (non-JSON) output of the query commands.
enum TextReports {
    static func groups(_ groups: [GroupSummary]) -> String {
        guard !groups.isEmpty else { return "no groups" }
        var table = Table("ID", "NAME", "STATE", "PRIORITY", "SUBMITTED", "FINISHED")
        for group in groups {
            table.add(
                group.id, group.name, group.state.word, "\(group.priority)", group.submittedAt.rfc3339,
                group.finishedAt?.rfc3339 ?? "-")
        }
        return table.text
    }

    /// The group's line and a row per child: state, worker, attempt, elapsed, error or reason.
    static func group(_ group: GroupDetail, now: WireTimestamp = .now) -> String {
        var lines = [
            "\(group.name) (\(group.id)): \(group.state.word)"
                + (group.priority == 0 ? "" : ", priority \(group.priority)")
                + (group.reason.map { " — \($0)" } ?? "")
        ]
        var table = Table("CHILD", "STATE", "WORKER", "ATTEMPT", "ELAPSED", "DETAIL")
        for child in group.children {
            table.add(
                child.path, child.state.word, child.worker ?? "-", child.attempt == 0 ? "-" : "\(child.attempt)",
                elapsed(child, now: now) ?? "-",
                (child.error ?? child.waitingReason
                    ?? (child.outputTruncated
                        ? "output truncated (maxOutputBytes)"
                        : child.isReused ? "reused (the earlier run's output)" : earlier(child)))
                    .replacingNewlines())
        }
        lines += table.lines
        let finished = group.children.count { $0.state.isFinished }
        let failed = group.children.count { $0.state == .failed }
        let cancelled = group.children.count { $0.state == .cancelled }
        let skipped = group.children.count { $0.state == .skipped }
        lines.append(
            "\(finished)/\(group.children.count) finished, \(failed) failed, \(cancelled) cancelled"
                + (skipped > 0 ? ", \(skipped) skipped" : ""))
        return lines.joined(separator: "\n")
    }

    /// A child's earlier attempts, the last one's end: `1 earlier: failed on w1: exit code 2`,
    /// `3 earlier, last lost on w2: …`; empty if it ran once.
    static func earlier(_ child: ChildStatus) -> String {
        guard let last = child.earlierAttempts.last else { return "" }
        let count = child.earlierAttempts.count
        return "\(count) earlier\(count == 1 ? ":" : ", last") \(last.outcome) on \(last.worker): \(last.error)"
    }

    /// How long the child ran (or has run so far).
    static func elapsed(_ child: ChildStatus, now: WireTimestamp) -> String? {
        guard let started = child.startedAt else { return nil }
        return formatElapsed(started.seconds(until: child.finishedAt ?? now))
    }

    static func workers(_ workers: [WorkerInfo]) -> String {
        guard !workers.isEmpty else { return "no workers" }
        var table = Table("ID", "NAME", "HOST", "LABELS", "KINDS", "SLOTS", "RUNNING", "STATE", "LAST HEARD")
        for worker in workers {
            table.add(
                worker.id, worker.name, worker.host, worker.labels.isEmpty ? "-" : worker.labels.joined(separator: ","),
                worker.kinds.isEmpty ? "-" : worker.kinds.joined(separator: ","), "\(worker.slots)",
                "\(worker.running)", worker.drained ? "\(worker.state.word) (drained)" : worker.state.word,
                worker.lastHeardAgo.map { "last heard \(formatAge($0)) ago" } ?? "-")
        }
        return table.text
    }

    /// The WORKER of a lock holder granted its lock but still waiting for a free slot.
    static let notPlaced = "(not placed yet)"

    static func locks(_ locks: [LockInfo]) -> String {
        guard !locks.isEmpty else { return "no locks held or waited for" }
        // One row per holder (a counting lock has several); the category's columns on its first.
        var table = Table("CATEGORY", "HELD/LIMIT", "TOKEN", "HOLDER", "HELD", "WORKER", "WAITERS")
        for lock in locks {
            let waiters = lock.waiters.map { waiter in
                (waiter.child.isEmpty ? waiter.group : "\(waiter.group)/\(waiter.child)")
                    + (waiter.waitingFor.map { " (waiting \(formatAge($0)))" } ?? "")
            }.joined(separator: ", ")
            let count = "\(lock.holders.count)/\(lock.limit)"
            guard !lock.holders.isEmpty else {
                table.add(lock.category, count, "\(lock.token)", "-", "-", "-", waiters.isEmpty ? "-" : waiters)
                continue
            }
            for (index, holder) in lock.holders.enumerated() {
                // A group (or nested group) holds its categories itself, attempt 0, on no worker.
                let name =
                    holder.attempt == 0
                    ? "\(holder.child.isEmpty ? holder.group : "\(holder.group)/\(holder.child)") (group hold)"
                    : "\(holder.group)/\(holder.child) (attempt \(holder.attempt))"
                let worker = holder.attempt == 0 ? "-" : holder.worker ?? TextReports.notPlaced
                let held = holder.heldFor.map { "held \(formatAge($0))" } ?? "-"
                let token = holder.token ?? lock.token
                if index == 0 {
                    table.add(lock.category, count, "\(token)", name, held, worker, waiters.isEmpty ? "-" : waiters)
                } else {
                    table.add("", "", "\(token)", name, held, worker, "")
                }
            }
        }
        return table.text
    }
}

extension String {
    /// One line: newlines become `⏎ ` so a table row stays a row.
    func replacingNewlines() -> String {
        split(separator: "\n", omittingEmptySubsequences: true).joined(separator: " ⏎ ")
    }
}

import CohortClient

/// `--watch` when stdout is not a terminal: one line per event, nothing redrawn.
///
/// ```
/// watching release (g-1a2b): 7 children
/// [  0.01s] checkout: running on worker-a (attempt 1)
/// [  0.05s] checkout: succeeded
/// [  2.31s] release (g-1a2b) succeeded
/// ```
enum EventLines {
    static func line(for event: GroupEvent, model: WatchModel) -> String {
        switch event {
        case .snapshot(let detail):
            let finished = detail.children.count { $0.state.isFinished }
            return
                "watching \(detail.name) (\(detail.id)): \(detail.children.count) children, \(finished) finished, state \(detail.state.word)"
        case .child(let child, let at):
            return "\(stamp(at, model)) \(child.path): \(describe(child))"
        case .finished(let state, let reason, let at):
            let why = reason.map { ": \($0)" } ?? ""
            let skipped = model.count(.skipped)
            let counts =
                "\(model.count(.succeeded)) succeeded, \(model.count(.failed)) failed, \(model.count(.cancelled)) cancelled"
                + (skipped > 0 ? ", \(skipped) skipped" : "")
            return "\(stamp(at, model)) \(model.name) (\(model.id)) \(state.word)\(why) [\(counts)]"
        }
    }

    /// Whether `event` says something the lines so far (`model`, before the event) did not: a
    /// child event whose words are those of the child's last line (`ready` again, now with a
    /// worker) prints nothing, so each line is one visible change.
    static func isNews(_ event: GroupEvent, model: WatchModel) -> Bool {
        guard case .child(let status, _) = event, let previous = model.children[status.path] else { return true }
        return describe(previous) != describe(status)
    }

    /// A child's state in words: `running on worker-a (attempt 2)`, `failed: exit code 1`.
    static func describe(_ child: ChildStatus) -> String {
        switch child.state {
        case .running:
            return "running" + (child.worker.map { " on \($0)" } ?? "")
                + (child.attempt > 1 ? " (attempt \(child.attempt))" : "")
        case .waiting:
            return "waiting" + (child.waitingReason.map { ": \($0)" } ?? "")
        case .failed, .cancelled, .skipped:
            return child.state.word + (child.error.map { ": \($0.replacingNewlines())" } ?? "")
        case .succeeded:
            return "succeeded" + (child.worker.map { " on \($0)" } ?? "")
        case .pending, .ready:
            return child.state.word
        }
    }

    private static func stamp(_ at: WireTimestamp, _ model: WatchModel) -> String {
        guard let start = model.submittedAt else { return "[\(at.rfc3339)]" }
        let seconds = (start.seconds(until: at) * 100).rounded() / 100
        let text = String(seconds)
        let decimals = text.split(separator: ".").last.map(\.count) ?? 0
        let padded = text + String(repeating: "0", count: max(0, 2 - decimals)) + "s"
        return "[" + String(repeating: " ", count: max(0, 8 - padded.count)) + padded + "]"
    }
}

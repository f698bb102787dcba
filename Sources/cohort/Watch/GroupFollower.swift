import CohortClient

/// Follows a group to its end, showing it as `--watch` does, and returns its final status.
enum GroupFollower {
    enum Style {
        /// Redrawn in place (stdout is a terminal).
        case live
        /// One line per event (stdout is not a terminal).
        case lines
        /// One JSON object per event, for `--watch --json`.
        case jsonLines
    }

    /// `.live` on a terminal, `.lines` otherwise; `.jsonLines` when `json`.
    static func style(json: Bool) -> Style {
        json ? .jsonLines : (Console.stdoutIsTerminal ? .live : .lines)
    }

    /// Shows every event of `group` until it finishes, then returns the group's final status.
    /// With `logs` above 0, the running children's logs too (``LogTails``): on a terminal the
    /// last `logs` lines under each running child; otherwise each line as it is written,
    /// `PATH | text` (with `.jsonLines`, an object with `"event": "log"`).
    ///
    /// `onEvent` sees every event after it is shown (the demo reacts to them).
    /// - Throws: ``ClientError``, or what `onEvent` throws.
    static func follow(
        _ client: CohortClient, group: String, style: Style, logs: Int = 0,
        onEvent: @escaping @Sendable (GroupEvent) async throws -> Void = { _ in }
    ) async throws -> GroupDetail {
        let children = LogTails.Children()
        let tails = logs > 0 ? LogTails(client: client, group: group, keep: logs) : nil
        let watched = { @Sendable (event: GroupEvent) in
            switch event {
            case .snapshot(let detail): for child in detail.children { children.update(child) }
            case .child(let child, _): children.update(child)
            case .finished: break
            }
        }
        // The final status is the watch's snapshot with its events folded in (no request after
        // the end), unless the group grew while watched (see `CohortClient.wait`).
        let fold: SnapshotFold
        switch style {
        case .live:
            let view = LiveView(group: group, logLines: logs)
            fold = try await LogTails.polling(tails, children, show: { await view.logs($0) }) {
                try await withThrowingTaskGroup(of: SnapshotFold?.self) { tasks in
                    tasks.addTask {
                        var fold = SnapshotFold()
                        for try await event in client.watch(group) {
                            fold.apply(event)
                            watched(event)
                            await view.apply(event)
                            try await onEvent(event)
                        }
                        return fold
                    }
                    tasks.addTask {
                        // The elapsed times move even when no event arrives.
                        while !Task.isCancelled {
                            try await Task.sleep(for: .milliseconds(250))
                            await view.redraw()
                        }
                        return nil
                    }
                    let first = try await tasks.next()
                    tasks.cancelAll()
                    return (first ?? nil) ?? SnapshotFold()
                }
            }
            await view.redraw()
        case .lines:
            fold = try await LogTails.polling(tails, children, show: Self.printLines) {
                var model = WatchModel(id: group)
                var fold = SnapshotFold()
                for try await event in client.watch(group) {
                    let shown = EventLines.isNews(event, model: model)
                    model.apply(event)
                    fold.apply(event)
                    watched(event)
                    if shown { Console.out(EventLines.line(for: event, model: model)) }
                    try await onEvent(event)
                }
                return fold
            }
        case .jsonLines:
            fold = try await LogTails.polling(tails, children, show: Self.printJSONLines) {
                var fold = SnapshotFold()
                for try await event in client.watch(group) {
                    Console.out(JSONShapes.event(event, group: group).jsonString())
                    fold.apply(event)
                    watched(event)
                    try await onEvent(event)
                }
                return fold
            }
        }
        if let detail = fold.detail, detail.state.isFinished, !fold.grew { return detail }
        return try await client.status(group)
    }

    /// Log lines into a pipe: `PATH | text`, one per line (a piece of a longer line too).
    @Sendable static func printLines(_ found: [LogTails.Lines]) async {
        for child in found {
            for line in child.lines {
                let text = String(decoding: LogPrinter.escaped(line.text), as: UTF8.self)
                Console.out("\(child.path) | " + (line.stream == .kind ? "[\(line.level)] " : "") + text)
            }
        }
    }

    /// Log lines for `--json`: each line's object (as `cohort logs --json`) with `"event": "log"`
    /// and the child's `path`.
    @Sendable static func printJSONLines(_ found: [LogTails.Lines]) async {
        for child in found {
            for line in child.lines {
                guard case .object(var object) = line.json(attempt: child.attempt, worker: child.worker) else {
                    continue
                }
                object["event"] = .string("log")
                object["path"] = .string(child.path)
                Console.out(JSONValue.object(object).jsonString(pretty: false))
            }
        }
    }
}

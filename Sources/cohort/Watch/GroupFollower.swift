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
    ///
    /// `onEvent` sees every event after it is shown (the demo reacts to them).
    /// - Throws: ``ClientError``, or what `onEvent` throws.
    static func follow(
        _ client: CohortClient, group: String, style: Style,
        onEvent: @escaping @Sendable (GroupEvent) async throws -> Void = { _ in }
    ) async throws -> GroupDetail {
        // The final status is the watch's snapshot with its events folded in (no request after
        // the end), unless the group grew while watched (see `CohortClient.wait`).
        var fold = SnapshotFold()
        switch style {
        case .live:
            let view = LiveView(group: group)
            fold = try await withThrowingTaskGroup(of: SnapshotFold?.self) { tasks in
                tasks.addTask {
                    var fold = SnapshotFold()
                    for try await event in client.watch(group) {
                        fold.apply(event)
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
            await view.redraw()
        case .lines:
            var model = WatchModel(id: group)
            for try await event in client.watch(group) {
                let shown = EventLines.isNews(event, model: model)
                model.apply(event)
                fold.apply(event)
                if shown { Console.out(EventLines.line(for: event, model: model)) }
                try await onEvent(event)
            }
        case .jsonLines:
            for try await event in client.watch(group) {
                Console.out(JSONShapes.event(event, group: group).jsonString())
                fold.apply(event)
                try await onEvent(event)
            }
        }
        if let detail = fold.detail, detail.state.isFinished, !fold.grew { return detail }
        return try await client.status(group)
    }
}

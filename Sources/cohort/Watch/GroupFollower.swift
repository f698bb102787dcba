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
    /// - Throws: ``ClientError``.
    static func follow(_ client: CohortClient, group: String, style: Style) async throws -> GroupDetail {
        switch style {
        case .live:
            let view = LiveView(group: group)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    for try await event in client.watch(group) { await view.apply(event) }
                }
                tasks.addTask {
                    // The elapsed times move even when no event arrives.
                    while !Task.isCancelled {
                        try await Task.sleep(for: .milliseconds(250))
                        await view.redraw()
                    }
                }
                try await tasks.next()
                tasks.cancelAll()
            }
            await view.redraw()
        case .lines:
            var model = WatchModel(id: group)
            for try await event in client.watch(group) {
                model.apply(event)
                Console.out(EventLines.line(for: event, model: model))
            }
        case .jsonLines:
            for try await event in client.watch(group) {
                Console.out(JSONShapes.event(event, group: group).jsonString())
            }
        }
        return try await client.status(group)
    }
}

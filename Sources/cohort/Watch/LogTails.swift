import CohortClient
import Synchronization

/// `--watch --logs N`: what the running children write, read from the coordinator's log store
/// (docs/operations.md, "Logs") every ``interval`` while the group runs.
///
/// The watch's event loop says which children run (``LogTails/Children``); the poller asks
/// for each one's new lines (the last `keep` the first time, and again from a retry's first
/// lines), and once more for a child that has just finished, so its last lines are not missed.
struct LogTails {
    /// The children to read, shared by the event loop (which writes) and the poller.
    final class Children: Sendable {
        private struct State {
            var running: [String] = []
            var finished: [String] = []
        }
        private let state = Mutex(State())
        private let over = Atomic<Bool>(false)

        init() {}

        /// The watch has ended: the poller reads once more, then stops.
        func end() { over.store(true, ordering: .releasing) }
        var hasEnded: Bool { over.load(ordering: .acquiring) }

        /// Folds a child's new state in.
        func update(_ child: ChildStatus) {
            state.withLock { state in
                let known = state.running.firstIndex(of: child.path)
                switch (child.state, known) {
                case (.running, nil): state.running.append(child.path)
                case (.running, _): break
                case (_, let index?):
                    state.running.remove(at: index)
                    state.finished.append(child.path)
                case (_, nil): break
                }
            }
        }

        /// The children to read now: those running, then those that finished since the last
        /// call (read once more).
        func take() -> (running: [String], finished: [String]) {
            state.withLock { state in
                defer { state.finished.removeAll() }
                return (state.running, state.finished)
            }
        }
    }

    /// New lines of one child.
    struct Lines {
        var path: String
        var attempt: UInt32
        var worker: String
        var lines: [LogLine]
    }

    let client: CohortClient
    let group: String
    /// How many of a child's lines already written to show first.
    let keep: Int
    /// How often to read.
    static let interval = Duration.milliseconds(500)
    /// The most children read in one round (the first that run).
    static let maxChildren = 32
    /// The most pages read of one child in one round (a child that writes faster than that
    /// is shown behind, never skipped).
    static let maxPages = 8

    private var seen: [String: (attempt: UInt32, sequence: UInt64)] = [:]

    init(client: CohortClient, group: String, keep: Int) {
        self.client = client
        self.group = group
        self.keep = keep
    }

    /// Each child's lines since the last read: of `finished` children every line left (they
    /// are read this once), of the first ``maxChildren`` `running` ones up to ``maxPages``
    /// pages. A running child the coordinator cannot answer for now (a restart) is read again
    /// next round, from where it was.
    mutating func read(running: [String], finished: [String]) async -> [Lines] {
        var found: [Lines] = []
        let last = Set(finished)
        for path in finished + running.prefix(Self.maxChildren) {
            var known = seen[path]
            var pages = 0
            while last.contains(path) || pages < Self.maxPages {
                pages += 1
                let query = LogsQuery(
                    group: group, path: path, attempt: known?.attempt ?? 0, after: known?.sequence ?? 0,
                    tail: known == nil ? UInt32(keep) : 0, limit: 1_000)
                guard let page = try? await client.logs(query), page.attempt > 0 else { break }
                if let last = page.lines.last {
                    found.append(Lines(path: path, attempt: page.attempt, worker: page.worker, lines: page.lines))
                    known = (page.attempt, last.sequence)
                } else {
                    known = (page.attempt, max(known?.sequence ?? 0, page.lastSequence))
                }
                if page.more { continue }
                // A retry: its own log, from its last `keep` lines (as a child first seen).
                guard page.attemptFinished, page.latestAttempt > page.attempt else { break }
                known = nil
                seen[path] = nil
                let next = LogsQuery(
                    group: group, path: path, attempt: page.latestAttempt, tail: UInt32(keep), limit: 1_000)
                guard let retry = try? await client.logs(next) else { break }
                if let last = retry.lines.last {
                    found.append(Lines(path: path, attempt: retry.attempt, worker: retry.worker, lines: retry.lines))
                    known = (retry.attempt, last.sequence)
                } else {
                    known = (retry.attempt, retry.lastSequence)
                }
                break
            }
            seen[path] = known
        }
        return found
    }
}

extension LogTails {
    /// Runs `body` with the poller beside it: every ``interval`` the children `children` says
    /// run are read and what is new handed to `show`; once `body` has returned, one last read
    /// (the children that finished meanwhile), then the poller stops.
    static func polling<T: Sendable>(
        _ tails: LogTails?, _ children: Children, show: @escaping @Sendable ([Lines]) async -> Void,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let tails else { return try await body() }
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask {
                defer { children.end() }
                return try await body()
            }
            tasks.addTask {
                var tails = tails
                while true {
                    let ending = children.hasEnded
                    let (running, finished) = children.take()
                    let found = await tails.read(running: running, finished: finished)
                    if !found.isEmpty { await show(found) }
                    if ending || Task.isCancelled { return nil }
                    try? await Task.sleep(for: interval)
                }
            }
            var result: T?
            for try await value in tasks where value != nil { result = value }
            guard let result else { throw CancellationError() }
            return result
        }
    }
}

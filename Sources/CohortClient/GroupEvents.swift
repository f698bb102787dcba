import CohortWire

extension CohortClient {
    /// The events of a group, from a snapshot of every child to the group's end.
    ///
    /// The sequence yields ``GroupEvent/snapshot(_:)`` first, then a ``GroupEvent/child(_:at:)``
    /// per state change, and ends after ``GroupEvent/finished(_:reason:at:)``. Watching a group
    /// that has already finished yields its snapshot and its end. Stopping the iteration early
    /// unwatches. Iteration throws ``ClientError`` (``ClientError/Code/notFound`` for an unknown
    /// group, ``ClientError/Code/connectionLost`` if the coordinator stops answering).
    public func watch(_ group: String) -> GroupEvents {
        GroupEvents(replies: connection.watch(group: group))
    }

    /// Waits until the group has finished and returns its final status: the watch's snapshot
    /// with every later event folded in, with no request after the watch's end. (A group that
    /// grew while watched, or a map that made its procedures, is asked for once at the end:
    /// where a new child goes is the coordinator's to say.)
    /// - Throws: ``ClientError`` as ``watch(_:)``.
    public func wait(_ group: String) async throws(ClientError) -> GroupDetail {
        var fold = SnapshotFold()
        do {
            for try await event in watch(group) {
                fold.apply(event)
                if case .finished = event { break }
            }
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(.internal, "\(error)")
        }
        if let detail = fold.detail, detail.state.isFinished, !fold.grew { return detail }
        return try await status(group)
    }
}

/// A watch's snapshot with its later events folded in, as a `status` after them would answer:
/// a child's new status replaces its old one (found by path, in constant time) and the group's
/// end sets its state, reason and finish time.
package struct SnapshotFold {
    package private(set) var detail: GroupDetail?
    private var indexByPath: [String: Int] = [:]
    /// A child the snapshot did not have appeared (added to a growing group, a map's procedure).
    package private(set) var grew = false

    package init() {}

    package mutating func apply(_ event: GroupEvent) {
        switch event {
        case .snapshot(let snapshot):
            detail = snapshot
            indexByPath = Dictionary(snapshot.children.enumerated().map { ($1.path, $0) }) { _, last in last }
            grew = false
        case .child(let status, _):
            guard detail != nil else { return }
            if let index = indexByPath[status.path] {
                detail?.children[index] = status
            } else {
                grew = true
            }
            if detail?.state == .pending, status.state == .running { detail?.state = .running }
        case .finished(let state, let reason, let at):
            detail?.state = state
            detail?.reason = reason
            detail?.finishedAt = at
        }
    }
}

/// The events of one watched group; see ``CohortClient/watch(_:)``.
public struct GroupEvents: AsyncSequence, Sendable {
    public typealias Element = GroupEvent

    let replies: AsyncThrowingStream<CoordinatorReply.Kind, any Error>

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: replies.makeAsyncIterator())
    }

    /// Flattens the coordinator's batches of events into single events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<CoordinatorReply.Kind, any Error>.AsyncIterator
        var buffered: [GroupEvent] = []
        var ended = false

        /// The next event, or `nil` after the group's end.
        /// - Throws: ``ClientError``.
        public mutating func next() async throws -> GroupEvent? {
            while buffered.isEmpty {
                guard !ended, let reply = try await base.next() else { return nil }
                switch reply {
                case .group(let detail):
                    buffered.append(.snapshot(detail))
                    if detail.state.isFinished {
                        buffered.append(
                            .finished(detail.state, reason: detail.reason, at: detail.finishedAt ?? detail.submittedAt))
                        ended = true
                    }
                case .watchEvents(let events):
                    for event in events {
                        switch event.kind {
                        case .child(let child):
                            buffered.append(.child(child, at: event.at))
                        case .finished(let state, let reason):
                            buffered.append(.finished(state, reason: reason, at: event.at))
                            ended = true
                        }
                    }
                default:
                    continue
                }
            }
            return buffered.removeFirst()
        }
    }
}

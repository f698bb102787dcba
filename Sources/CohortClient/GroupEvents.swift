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

    /// Waits until the group has finished and returns its final status.
    /// - Throws: ``ClientError`` as ``watch(_:)``.
    public func wait(_ group: String) async throws(ClientError) -> GroupDetail {
        do {
            for try await event in watch(group) {
                if case .finished = event { break }
            }
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(.internal, "\(error)")
        }
        return try await status(group)
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

import CohortSpec
import CohortWire

extension CohortClient {
    /// Every group the coordinator knows (those it runs, and the finished ones its journal
    /// keeps, up to 10,000), newest submission first.
    public func status() async throws(ClientError) -> [GroupSummary] {
        try await status(filter: .all)
    }

    /// The groups `filter` selects (states, a name glob, a submission time), newest
    /// submission first, at most `filter.limit` (0: every one, up to 10,000). The coordinator
    /// filters, over what it runs and the finished groups its journal keeps (its `retention`
    /// and `cohort prune` decide how far back).
    ///
    /// ```swift
    /// let failed = try await client.status(filter: GroupFilter(states: [.failed], nameGlob: "release-*"))
    /// ```
    /// - Throws: ``ClientError/Code/rejected`` for a glob with a `[` and no `]`.
    public func status(filter: GroupFilter) async throws(ClientError) -> [GroupSummary] {
        let reply = try await connection.request(.status(group: nil, filter: filter))
        guard case .groups(let groups) = reply else { throw unexpected(reply, for: "status") }
        return groups
    }

    /// One group and every child.
    /// - Throws: ``ClientError/Code/notFound`` for an unknown group.
    public func status(_ group: String) async throws(ClientError) -> GroupDetail {
        let reply = try await connection.request(.status(group: group))
        guard case .group(let detail) = reply else { throw unexpected(reply, for: "status") }
        return detail
    }

    /// A finished child's result (`child` is its path, `tests/unit`), or the group's own result
    /// when `child` is `nil`.
    /// - Throws: ``ClientError/Code/notFound`` for an unknown group or child; the coordinator's
    ///   refusal for a child that has not finished.
    public func result(_ group: String, child: String?) async throws(ClientError) -> ChildOutcome {
        try await resultDetail(group, child: child).outcome
    }

    /// A finished child's result, and whether the coordinator cut its output down to its
    /// `maxOutputBytes` (a marker in the output shows where).
    /// - Throws: as ``result(_:child:)``.
    public func resultDetail(_ group: String, child: String?) async throws(ClientError) -> (
        outcome: ChildOutcome, outputTruncated: Bool
    ) {
        let reply = try await connection.request(.result(group: group, path: child))
        guard case .result(let result) = reply else { throw unexpected(reply, for: "result") }
        switch result.outcome {
        case .succeeded(let output):
            do {
                return (.succeeded(output.isEmpty ? .null : try JSONValue(jsonData: output)), result.outputTruncated)
            } catch {
                throw ClientError(.protocolMismatch, "the output of \(group)/\(child ?? "") is not JSON: \(error)")
            }
        case .failed(let error): return (.failed(error), false)
        case .cancelled(let reason, _): return (.cancelled(reason), false)
        }
    }

    /// Cancels a group, or one child of it (and, by the group's policy, its dependents).
    ///
    /// Returns once the coordinator accepted the cancel; the group's end follows in its status
    /// and watch events (``wait(_:)`` waits for it).
    /// - Returns: nil when the cancel took effect; the state the group (or child) had already
    ///   finished in, when there was nothing to cancel.
    /// - Throws: ``ClientError/Code/notFound`` for an unknown group or child.
    @discardableResult
    public func cancel(_ group: String, child: String? = nil, reason: String = "")
        async throws(ClientError) -> ChildState?
    {
        let reply = try await connection.request(.cancel(group: group, path: child, reason: reason))
        guard case .cancelAccepted(_, _, let alreadyFinished) = reply else { throw unexpected(reply, for: "cancel") }
        return alreadyFinished
    }

    /// Adds `children` to a running group (into its nested group at `into`, a path; `nil`: the
    /// top level) and returns the added nodes' paths, in document order (docs/spec.md,
    /// "Growing groups"). They are validated like a spec's children (`after` and `inject` may
    /// name existing siblings), journaled before this returns, and the group finishes only
    /// after them. With ``ClientConfiguration/attemptToken`` a running child may add to its own
    /// group.
    ///
    /// - Throws: ``ClientError``: `invalidSpec` naming each problem; `rejected` for a group (or
    ///   nested group) that has finished or is being cancelled, or an addition that breaks a
    ///   rule (a category its holding group does not hold); `notFound`; `permissionDenied`.
    public func add(children: [ChildSpec], to group: String, into: String? = nil) async throws(ClientError)
        -> [String]
    {
        let document = JSONValue.object(["children": .array(children.map(\.specJSON))]).jsonString()
        let reply = try await connection.request(
            .addChildren(group: group, ChildrenAddition(document: document, format: .json, into: into)))
        guard case .childrenAdded(_, let paths) = reply else { throw unexpected(reply, for: "add") }
        return paths
    }

    /// Adds the children of `document` (YAML or JSON: a list of children written like a spec's
    /// `children`, or a mapping with `children:`) to a running group, as
    /// ``add(children:to:into:)`` does; what `cohort add` sends.
    public func add(document: String, format: CohortWire.SpecFormat = .yaml, to group: String, into: String? = nil)
        async throws(ClientError) -> [String]
    {
        let reply = try await connection.request(
            .addChildren(group: group, ChildrenAddition(document: document, format: format, into: into)))
        guard case .childrenAdded(_, let paths) = reply else { throw unexpected(reply, for: "add") }
        return paths
    }

    /// The connected workers.
    public func workers() async throws(ClientError) -> [WorkerInfo] {
        let reply = try await connection.request(.workers)
        guard case .workers(let workers) = reply else { throw unexpected(reply, for: "workers") }
        return workers
    }

    /// The cluster-wide lock table: every category held or waited for.
    public func locks() async throws(ClientError) -> [LockInfo] {
        let reply = try await connection.request(.locks)
        guard case .locks(let locks) = reply else { throw unexpected(reply, for: "locks") }
        return locks
    }
}

import CohortClient

/// What a watcher knows about a group: every child's latest status, in spec order.
struct WatchModel {
    var id: String
    var name = ""
    var state: GroupState = .pending
    var reason: String?
    var submittedAt: WireTimestamp?
    var finishedAt: WireTimestamp?
    private(set) var paths: [String] = []
    private(set) var children: [String: ChildStatus] = [:]

    init(id: String) {
        self.id = id
    }

    /// Folds one event in.
    mutating func apply(_ event: GroupEvent) {
        switch event {
        case .snapshot(let detail):
            name = detail.name
            state = detail.state
            reason = detail.reason
            submittedAt = detail.submittedAt
            finishedAt = detail.finishedAt
            paths = detail.children.map(\.path)
            children = Dictionary(detail.children.map { ($0.path, $0) }, uniquingKeysWith: { _, last in last })
        case .child(let status, _):
            if children[status.path] == nil { insert(status.path) }
            children[status.path] = status
            if state == .pending, status.state == .running { state = .running }
        case .finished(let state, let reason, let at):
            self.state = state
            self.reason = reason
            finishedAt = at
        }
    }

    /// A child added while the group runs (or a map's procedure) goes at the end of its
    /// group: after the last path inside that group, which a backwards search finds after a
    /// few steps (additions go at the end of their group).
    private mutating func insert(_ path: String) {
        guard let slash = path.lastIndex(of: "/") else { return paths.append(path) }
        let parent = path[..<slash]
        let inside = parent + "/"
        let index = paths.lastIndex { $0 == parent || $0.hasPrefix(inside) }
        paths.insert(path, at: index.map { $0 + 1 } ?? paths.count)
    }

    /// Children in spec order.
    var orderedChildren: [ChildStatus] { paths.compactMap { children[$0] } }

    var total: Int { paths.count }
    var finished: Int { children.values.count { $0.state.isFinished } }
    func count(_ state: ChildState) -> Int { children.values.count { $0.state == state } }

    /// Seconds since the group was submitted (until it finished).
    func elapsed(now: WireTimestamp) -> Double {
        guard let submittedAt else { return 0 }
        return submittedAt.seconds(until: finishedAt ?? now)
    }
}

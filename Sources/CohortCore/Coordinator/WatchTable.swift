/// Who watches which group: each watch is a client's routing (the coordinator's ROUTER id, the
/// simulation's connection) and the request id its events carry. A decision of the
/// coordinator's shell, pure, so the coordinator and the simulation share it: the shell sends
/// the events, and tells the scheduler the ``Change``s (a group becomes watched or stops being
/// watched), so the scheduler reports a group's child changes exactly while someone watches it.
public struct WatchTable<Routing: Hashable & Sendable>: Sendable {
    public struct Watch: Hashable, Sendable {
        public var routing: Routing
        public var requestID: UInt64

        public init(routing: Routing, requestID: UInt64) {
            self.routing = routing
            self.requestID = requestID
        }
    }

    /// A group became watched, or stopped being watched.
    public struct Change: Hashable, Sendable {
        public var group: String
        public var watched: Bool

        public init(group: String, watched: Bool) {
            self.group = group
            self.watched = watched
        }
    }

    /// Never an empty list: a group nobody watches has no entry.
    public private(set) var byGroup: [String: [Watch]] = [:]

    public init() {}

    /// The watches of `group`, oldest first.
    public func watches(of group: String) -> [Watch] { byGroup[group] ?? [] }

    /// The watches of one client, by group.
    public func watches(by routing: Routing) -> [(group: String, watch: Watch)] {
        byGroup.sorted { $0.key < $1.key }.flatMap { group, list in
            list.filter { $0.routing == routing }.map { (group, $0) }
        }
    }

    /// The clients watching something.
    public var clients: Set<Routing> { Set(byGroup.values.flatMap { $0.map(\.routing) }) }

    /// A client watches `group` under `requestID` (again: nothing changes).
    public mutating func add(_ group: String, by routing: Routing, requestID: UInt64) -> [Change] {
        let watch = Watch(routing: routing, requestID: requestID)
        var list = byGroup[group] ?? []
        if !list.contains(watch) { list.append(watch) }
        return set(list, of: group)
    }

    /// A client stops watching `group` (every watch of it there).
    public mutating func remove(_ group: String, by routing: Routing) -> [Change] {
        set(byGroup[group]?.filter { $0.routing != routing }, of: group)
    }

    /// A client left: all its watches end.
    public mutating func removeAll(by routing: Routing) -> [Change] {
        let groups = byGroup.filter { $0.value.contains { $0.routing == routing } }.keys.sorted()
        return groups.flatMap { remove($0, by: routing) }
    }

    /// The group finished: its watches end.
    public mutating func end(_ group: String) -> [Change] {
        set(nil, of: group)
    }

    /// Empty, or the one change of `group`.
    private mutating func set(_ list: [Watch]?, of group: String) -> [Change] {
        let list = list?.isEmpty == false ? list : nil
        let wasWatched = byGroup[group] != nil
        byGroup[group] = list
        let watched = list != nil
        return wasWatched == watched ? [] : [Change(group: group, watched: watched)]
    }
}

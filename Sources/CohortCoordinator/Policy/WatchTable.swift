/// Who watches which group: each watch is a client's routing id and the request id its events
/// carry. Pure: the loop sends the events, and tells the scheduler the ``Change``s (a group
/// becomes watched or stops being watched), so the scheduler reports a group's child changes
/// exactly while someone watches it.
struct WatchTable {
    struct Watch: Hashable {
        var routing: RoutingID
        var requestID: UInt64
    }

    /// A group became watched, or stopped being watched.
    struct Change: Hashable {
        var group: String
        var watched: Bool
    }

    /// Never an empty list: a group nobody watches has no entry.
    private(set) var byGroup: [String: [Watch]] = [:]

    /// The watches of `group`, oldest first.
    func watches(of group: String) -> [Watch] { byGroup[group] ?? [] }

    /// The watches of one client, by group.
    func watches(by routing: RoutingID) -> [(group: String, watch: Watch)] {
        byGroup.sorted { $0.key < $1.key }.flatMap { group, list in
            list.filter { $0.routing == routing }.map { (group, $0) }
        }
    }

    /// The clients watching something.
    var clients: Set<RoutingID> { Set(byGroup.values.flatMap { $0.map(\.routing) }) }

    /// A client watches `group` under `requestID` (again: nothing changes).
    mutating func add(_ group: String, by routing: RoutingID, requestID: UInt64) -> [Change] {
        let watch = Watch(routing: routing, requestID: requestID)
        var list = byGroup[group] ?? []
        if !list.contains(watch) { list.append(watch) }
        return set(list, of: group)
    }

    /// A client stops watching `group` (every watch of it there).
    mutating func remove(_ group: String, by routing: RoutingID) -> [Change] {
        set(byGroup[group]?.filter { $0.routing != routing }, of: group)
    }

    /// A client left: all its watches end.
    mutating func removeAll(by routing: RoutingID) -> [Change] {
        let groups = byGroup.filter { $0.value.contains { $0.routing == routing } }.keys.sorted()
        return groups.flatMap { remove($0, by: routing) }
    }

    /// The group finished: its watches end.
    mutating func end(_ group: String) -> [Change] {
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

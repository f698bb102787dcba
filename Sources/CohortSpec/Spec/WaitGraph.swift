/// The "waits for" relation of a spec as a graph of events, to find cycles that cross levels.
///
/// Each node (procedure or group) has a start event and a finish event. Edges point from an
/// event to what it waits for: a node's start waits for each dependency's finish and for its
/// parent group's start; a group's finish waits for each child's finish; a node's finish waits
/// for its start. The spec can run iff this graph has no cycle.
struct WaitGraph {
    private let tree: SpecTree
    /// Adjacency by event: `2 * node` is its start, `2 * node + 1` its finish.
    private var edges: [[Int]]
    /// Start events whose outgoing dependency edges come from `after`, `inject` or sequence order.
    private var dependencyEdges: Set<Edge> = []

    private struct Edge: Hashable {
        var from: Int
        var to: Int
    }

    init(_ tree: SpecTree) {
        self.tree = tree
        edges = Array(repeating: [], count: tree.nodes.count * 2)
        for node in tree.nodes.indices {
            let start = 2 * node
            let finish = start + 1
            edges[finish].append(start)
            if let parent = tree.nodes[node].parent { edges[start].append(2 * parent) }
            for child in tree.children(of: node) { edges[finish].append(2 * child + 1) }
            for dependency in tree.directDependencies(of: node) {
                edges[start].append(2 * dependency + 1)
                dependencyEdges.insert(Edge(from: start, to: 2 * dependency + 1))
            }
        }
    }

    /// One cycle per strongly connected component that has one, as the nodes whose dependency
    /// edges form it, in order: each waits for the next, the last for the first.
    func cycles() -> [[Int]] {
        stronglyConnectedComponents().filter { $0.count > 1 }.compactMap(cycle(in:))
    }

    /// Tarjan's algorithm, iterative (specs may hold 100,000 children).
    private func stronglyConnectedComponents() -> [[Int]] {
        let count = edges.count
        var index = [Int](repeating: -1, count: count)
        var lowLink = [Int](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var stack: [Int] = []
        var components: [[Int]] = []
        var nextIndex = 0
        // (vertex, position in its edge list)
        var work: [(Int, Int)] = []

        for root in 0..<count where index[root] == -1 {
            work.append((root, 0))
            while let (vertex, position) = work.last {
                if position == 0 && index[vertex] == -1 {
                    index[vertex] = nextIndex
                    lowLink[vertex] = nextIndex
                    nextIndex += 1
                    stack.append(vertex)
                    onStack[vertex] = true
                }
                if position < edges[vertex].count {
                    work[work.count - 1].1 += 1
                    let next = edges[vertex][position]
                    if index[next] == -1 {
                        work.append((next, 0))
                    } else if onStack[next] {
                        lowLink[vertex] = min(lowLink[vertex], index[next])
                    }
                    continue
                }
                work.removeLast()
                if let (parent, _) = work.last {
                    lowLink[parent] = min(lowLink[parent], lowLink[vertex])
                }
                if lowLink[vertex] == index[vertex] {
                    var component: [Int] = []
                    while let member = stack.popLast() {
                        onStack[member] = false
                        component.append(member)
                        if member == vertex { break }
                    }
                    components.append(component)
                }
            }
        }
        return components
    }

    /// A shortest cycle through the component, reported by its dependency edges' sources.
    private func cycle(in component: [Int]) -> [Int]? {
        let members = Set(component)
        // Start from a dependency edge inside the component; every cycle here has one.
        guard
            let first = dependencyEdges.filter({ members.contains($0.from) && members.contains($0.to) })
                .min(by: { ($0.from, $0.to) < ($1.from, $1.to) })
        else { return nil }
        // Breadth-first from the edge's target back to its source.
        var previous: [Int: Int] = [first.to: first.from]
        var queue = [first.to]
        var head = 0
        while head < queue.count, previous[first.from] == nil || first.from == first.to {
            let vertex = queue[head]
            head += 1
            for next in edges[vertex] where members.contains(next) && previous[next] == nil {
                previous[next] = vertex
                queue.append(next)
            }
        }
        guard previous[first.from] != nil else { return nil }
        // Walk back from the source to the target, collecting the path's events.
        var path: [Int] = [first.from]
        var vertex = first.from
        while vertex != first.to {
            vertex = previous[vertex]!
            path.append(vertex)
        }
        path.reverse()  // first.to … first.from
        let events = [first.from] + path.dropLast()  // from, to, …, (back to from)
        var nodes: [Int] = []
        for (offset, event) in events.enumerated() {
            let next = events[(offset + 1) % events.count]
            if dependencyEdges.contains(Edge(from: event, to: next)) { nodes.append(event / 2) }
        }
        return nodes.isEmpty ? nil : nodes
    }
}

import CohortSpec
import Foundation

/// Fan-out at run time: a `map` child (docs/spec.md, "Fan-out at run time: map";
/// docs/scheduling.md, "Maps").
///
/// A map child is a nested group with no procedures until the coordinator reads its list. The
/// mechanism:
/// - until then the group counts as one unfinished procedure in itself and every enclosing
///   group (`GroupPlan.pendingMaps`), so nothing around it finishes early, and it counts down
///   the nodes it waits for (`NestedRun.mapWaitsFor`, `GroupPlan.mapWaits`);
/// - once all have finished (or the group is being cancelled) it is *ready*: the failure
///   rules, its `if:`/`require:` and its producer decide, once, whether it fans out; if so,
///   one procedure per item of the producer's list is added to it by the growing-groups
///   mechanism (Scheduler+Growing.swift) and journaled as an addition, so a restart makes the
///   same procedures at the same indexes before anything else is restored. A map that ends
///   without procedures (skipped, failed, cancelled, or an empty list) is journaled as an
///   outcome of the group's path, which a restart replays in its place among the children's;
/// - `maxParallel`: a procedure takes one of the map's places before it starts its first
///   attempt and gives it back when it finishes (retries and repeats keep it); the others
///   wait `throttled`, first come first served.
extension Scheduler {
    /// How a map that makes no procedures ends.
    enum MapEnd {
        case succeeded
        case skipped(String)
        case failed(String)
        case cancelled(CancellationReason)
    }

    /// One of a map group's dependencies finished: at the last, the map is ready.
    mutating func mapDependencyFinished(_ runIndex: Int, _ group: Int) {
        guard let state = runs[runIndex]?.groups[group] else { return }
        runs[runIndex]?.groups[group].mapWaitsFor -= 1
        if state.mapWaitsFor == 1 { work.append(.mapReady(runIndex: runIndex, group: group)) }
    }

    /// Map group `group` is ready (or being cancelled): it fans out, or ends without
    /// procedures. Does nothing for a map already expanded.
    mutating func expandMap(_ runIndex: Int, _ group: Int, now: Timestamp) {
        guard let run = runs[runIndex], run.flat.groups.indices.contains(group) else { return }
        let plan = run.plan
        let flatGroup = plan.flat.groups[group]
        guard flatGroup.mapPending, let fanOut = flatGroup.fanOut?.map, !run.groups[group].phase.isFinished,
            !run.groups[group].mapEndJournaled
        else {
            return
        }
        let chain = plan.ancestors(ofGroup: group) + [group]
        if let reason = chain.lazy.compactMap({ run.groups[$0].cancelReason }).first {
            return endMap(runIndex, group, .cancelled(reason), now: now)
        }
        guard run.groups[group].mapWaitsFor <= 0 else { return }
        if let end = dependencyRule(run, group) { return endMap(runIndex, group, end, now: now) }
        runs[runIndex]?.groups[group].conditionChecked = true
        switch decide(runIndex, condition: flatGroup.condition, requirement: flatGroup.requirement) {
        case .run: break
        case .skip(let why): return endMap(runIndex, group, .skipped(why), now: now)
        case .fail(let why): return endMap(runIndex, group, .failed(why), now: now)
        }
        let items: [JSONValue]
        switch mapItems(run, flatGroup, fanOut.map) {
        case .success(let list): items = list
        case .failure(let failure): return endMap(runIndex, group, failure.end, now: now)
        }
        guard !items.isEmpty else { return endMap(runIndex, group, .succeeded, now: now) }
        let children = items.enumerated().map { MapSpec.child(fanOut.template, index: $0.offset, item: $0.element) }
        let grown: GroupSpec
        let paths: [String]
        do {
            grown = try plan.spec.adding(children, into: flatGroup.path, limits: Self.replayLimits)
            paths = try grow(runIndex, grown: grown, into: flatGroup.path, expandsMap: true, now: now)
        } catch {
            return endMap(runIndex, group, .failed("map: its procedures could not be made: \(error)"), now: now)
        }
        if emitsRecords {
            actions.append(.record(.childrenAdded(group: plan.id, into: flatGroup.path, children: children, at: now)))
        }
        if let outputs = runs[runIndex]?.reusable, !outputs.isEmpty { reuseMapped(runIndex, paths, outputs, now: now) }
    }

    /// The failure rules for a ready map, as for a procedure in its place
    /// (``dependencyEnded(_:_:_:_:now:)``): unless an `if:` of the map or of an enclosing group
    /// decides, a skipped dependency skips it (not one it only follows in a sequence), a failed
    /// producer or inject source cancels it, and under `cancel-dependents` so does any failed
    /// dependency.
    private func dependencyRule(_ run: GroupRun, _ group: Int) -> MapEnd? {
        let plan = run.plan
        let flatGroup = plan.flat.groups[group]
        let injected = Set(
            (flatGroup.fanOut?.map?.template.inject.map(\.from) ?? []) + [flatGroup.fanOut?.map?.map.from ?? ""])
        for path in flatGroup.waitsFor {
            guard let node = plan.nodeByPath[path], let end = nodeEnd(run.runIndex, node), !end.succeeded,
                !plan.conditionDecides(group: group, after: path)
            else { continue }
            if end.skipped {
                if plan.skipPassesBySequence(group: group, after: path) { continue }
                return .skipped("dependency \"\(path)\" was skipped")
            }
            let name = path.split(separator: "/").last.map(String.init) ?? path
            if node < plan.flat.leaves.count, node == flatGroup.mapProducer || injected.contains(name) {
                return .cancelled(end.failed ? .producerFailed(path: path) : .producerCancelled(path: path))
            }
            if end.policy == .cancelDependents {
                return .cancelled(.dependencyFailed(path: path, cancelled: !end.failed, policy: .cancelDependents))
            }
        }
        return nil
    }

    /// The producer's list, or how the map ends without one.
    private func mapItems(_ run: GroupRun, _ group: FlatGroup, _ map: MapSpec) -> Result<[JSONValue], MapEndError> {
        guard let producer = group.mapProducer else {
            return .failure(.init(.failed("map: \"\(map.from)\" is not a procedure of this group")))
        }
        let path = run.flat.leaves[producer].path
        switch run.children[producer].phase {
        case .succeeded: break
        case .skipped: return .failure(.init(.skipped("producer \"\(path)\" was skipped")))
        case .failed: return .failure(.init(.cancelled(.producerFailed(path: path))))
        default: return .failure(.init(.cancelled(.producerCancelled(path: path))))
        }
        if run.children[producer].outputTruncated {
            return .failure(
                .init(
                    .failed(
                        "map: producer \"\(path)\" returned more output than maxOutputBytes and it was cut; its list is not whole"
                    )))
        }
        guard let output = try? JSONValue(jsonData: run.children[producer].output ?? Data("null".utf8)) else {
            return .failure(.init(.failed("map: producer \"\(path)\" returned output that is not JSON")))
        }
        guard let selected = output.select(map.select) else {
            return .failure(.init(.failed("map: producer \"\(path)\" output has nothing at \"\(map.select)\"")))
        }
        let items: [JSONValue]
        switch selected {
        case .array(let list):
            items = list
        case .string(let text):
            // A shell's `stdout`: one item per line (empty lines left out), as xargs reads it.
            items = text.split(whereSeparator: \.isNewline).map { .string(String($0)) }
        default:
            return .failure(
                .init(
                    .failed(
                        "map: producer \"\(path)\" output at \"\(map.select)\" is \(selected.typeName), not a list (or a string of lines)"
                    )))
        }
        let limit = configuration.maxMapItems
        guard items.count <= limit else {
            return .failure(
                .init(
                    .failed(
                        "map: producer \"\(path)\" returned \(items.count) items; a map makes at most \(limit) procedures (limit maxChildrenPerGroup)"
                    )))
        }
        let total = configuration.maxProcedures
        guard run.leafCount + items.count <= total else {
            return .failure(
                .init(
                    .failed(
                        "map: producer \"\(path)\" returned \(items.count) items; with the group's \(run.leafCount) procedures that is over \(total) (limit maxTotalChildren)"
                    )))
        }
        return .success(items)
    }

    struct MapEndError: Error {
        var end: MapEnd
        init(_ end: MapEnd) { self.end = end }
    }

    /// Ends a map without procedures: its outcome counted where a procedure's would be, the map
    /// marked expanded (an empty addition, not journaled), and the group finished.
    mutating func endMap(_ runIndex: Int, _ group: Int, _ end: MapEnd, now: Timestamp) {
        guard let plan = runs[runIndex]?.plan else { return }
        runs[runIndex]?.groups[group].mapEndJournaled = false
        let chain = plan.ancestors(ofGroup: group) + [group]
        if emitsRecords {
            // Journaled as the group's own record: a restart replays it in its place among the
            // outcomes instead of deciding again (a cancel asked for before the producer
            // finished would be applied only after it; simulation, seed 24).
            let (phase, why): (ChildPhase, CancellationReason?) =
                switch end {
                case .succeeded: (.succeeded, nil)
                case .skipped(let why): (.skipped, .skipped(why))
                case .failed(let why): (.failed, .custom(why))
                case .cancelled(let reason): (.cancelled, runs[runIndex]?.groups[group].cancelReason ?? reason)
                }
            actions.append(
                .record(
                    .finished(
                        ChildRecord(
                            group: plan.id, path: plan.flat.groups[group].path, attempt: 0, attemptID: .none,
                            state: .finished(phase), output: nil, error: why?.text,
                            cancelReason: phase == .failed ? nil : why, worker: nil, startedAt: nil,
                            finishedAt: now))))
        }
        for index in chain { runs[runIndex]?.groups[index].emptyMaps += 1 }
        switch end {
        case .succeeded:
            break
        case .skipped(let why):
            runs[runIndex]?.groups[group].wasSkipped = true
            runs[runIndex]?.groups[group].endReason = why
            for index in chain { runs[runIndex]?.groups[index].skippedMaps += 1 }
        case .failed(let why):
            let path = plan.flat.groups[group].path
            for index in chain {
                runs[runIndex]?.groups[index].failed += 1
                if runs[runIndex]?.groups[index].firstFailure == nil {
                    runs[runIndex]?.groups[index].firstFailure = index == group ? why : "\"\(path)\" failed: \(why)"
                }
            }
        case .cancelled(let reason):
            // Cancelled with its group (its `cancelReason` is set) or as a consequence (a
            // failed producer or dependency): the latter counts like a procedure cancelled by
            // propagation, whose end the enclosing group's `cancel-group` policy follows.
            if runs[runIndex]?.groups[group].cancelReason == nil {
                runs[runIndex]?.groups[group].cancelled += 1
                runs[runIndex]?.groups[group].endReason = reason.text
            }
            for index in chain where index != group { runs[runIndex]?.groups[index].cancelled += 1 }
        }
        let path = plan.flat.groups[group].path
        guard let grown = try? plan.spec.adding([], into: path, limits: Self.replayLimits) else { return }
        _ = try? grow(runIndex, grown: grown, into: path, expandsMap: true, now: now)
    }

    /// A map's procedures that an earlier run of the same spec finished successfully (`cohort
    /// rerun`) start succeeded with that output, if everything they wait for succeeded.
    private mutating func reuseMapped(_ runIndex: Int, _ paths: [String], _ outputs: [String: Data], now: Timestamp) {
        guard let plan = runs[runIndex]?.plan else { return }
        for path in paths {
            guard let output = outputs[path], let leaf = plan.nodeByPath[path], leaf < plan.flat.leaves.count,
                let child = runs[runIndex]?.children[leaf], !child.isDone, child.remaining == 0
            else { continue }
            let waited = plan.flat.leaves[leaf].waitsFor.compactMap { plan.nodeByPath[$0] }
            guard waited.allSatisfy({ nodeEnd(runIndex, $0)?.succeeded == true }) else { continue }
            finishLeaf(runIndex, leaf, .succeeded, output: output, now: now)
            mapReuses += 1
        }
    }

    // MARK: maxParallel

    /// Gives `leaf` one of its map's places if one is free; else queues it for the next.
    mutating func admitToMap(_ runIndex: Int, _ leaf: Int, limit: Int) -> Bool {
        guard let group = runs[runIndex]?.flat.leaves[leaf].group, let state = runs[runIndex]?.groups[group] else {
            return true
        }
        if state.mapRunning < limit {
            runs[runIndex]?.groups[group].mapRunning += 1
            runs[runIndex]?.children[leaf].admitted = true
            return true
        }
        if runs[runIndex]?.children[leaf].stage != .throttled {
            runs[runIndex]?.groups[group].mapQueue.append(Int32(leaf))
        }
        return false
    }

    /// A map's procedure that held a place finished: the first procedure waiting takes it.
    mutating func leaveMap(_ runIndex: Int, _ leaf: Int) {
        guard let group = runs[runIndex]?.flat.leaves[leaf].group else { return }
        runs[runIndex]?.children[leaf].admitted = false
        runs[runIndex]?.groups[group].mapRunning -= 1
        while let next = runs[runIndex]?.groups[group].mapQueue.popFirst() {
            guard runs[runIndex]?.children[Int(next)].stage == .throttled else { continue }
            runs[runIndex]?.groups[group].mapRunning += 1
            runs[runIndex]?.children[Int(next)].admitted = true
            work.append(.unblocked(runIndex: runIndex, leaf: Int(next)))
            return
        }
    }
}

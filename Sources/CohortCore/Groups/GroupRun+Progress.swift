import CohortSpec
import DequeModule
import Foundation

/// What a run decides from its own state alone: a leaf's finish and the counting it sets off
/// (dependents, enclosing groups), retry budgets, the errors of every attempt, the input a
/// consumer gets from its producers, how a finished group reads.
///
/// These never look at workers, locks or other runs, so the facade calls them through the
/// run table without copying the run (`runs[i]?.injectedInput(leaf)`).
extension GroupRun {
    /// Finishes a leaf for good (its attempt has ended): its outcome, its enclosing groups'
    /// counts, and the propagation work that follows — the leaf's dependents, then every
    /// enclosing group it was the last of, innermost first, so a nested group finishes
    /// before its parent.
    mutating func finishLeaf(
        _ leaf: Int, _ phase: ChildPhase, message: String?, reason: CancellationReason?, output: Data?, now: Timestamp,
        work: inout Deque<Work>
    ) {
        children[leaf].stage = .done
        children[leaf].phase = phase
        children[leaf].finishedAt = now
        children[leaf].output = output
        children[leaf].input = nil
        children[leaf].cancelling = nil
        children[leaf].attemptErrors = []
        // A success clears the error an earlier attempt left: status shows the outcome it has.
        children[leaf].error = phase == .succeeded ? nil : message
        if phase == .cancelled || phase == .skipped {
            children[leaf].cancelReason = reason ?? message.map(CancellationReason.custom)
        }
        let flatLeaf = flat.leaves[leaf]
        for group in flatLeaf.ancestors {
            groups[group].unfinished -= 1
            switch phase {
            case .failed:
                groups[group].failed += 1
                if groups[group].firstFailure == nil {
                    groups[group].firstFailure = "\"\(flatLeaf.path)\" failed: \(message ?? "unknown error")"
                }
            case .cancelled:
                groups[group].cancelled += 1
            case .skipped:
                groups[group].skipped += 1
            default: break
            }
        }
        work.append(.nodeFinished(runIndex: runIndex, node: leaf))
        for group in flatLeaf.ancestors.reversed() where groups[group].unfinished == 0 {
            work.append(.nodeFinished(runIndex: runIndex, node: leafCount + group))
        }
    }

    /// The child's retry budget: attempts in all, the first included.
    func retryBudget(_ leaf: Int) -> UInt32 {
        UInt32(clamping: max(flat.leaves[leaf].retry?.attempts ?? 1, 1))
    }

    /// Whether the leaf or a group around it was cancelled (then a failure is not retried).
    func isInCancelledGroup(_ leaf: Int) -> Bool {
        flat.leaves[leaf].ancestors.contains { groups[$0].cancelReason != nil }
    }

    /// The final error of a child whose attempt ended with `last`: `last` alone after a single
    /// attempt, else every attempt's error, `attempt 1: exit code 2; attempt 2: timed out; …`.
    func everyAttemptsError(_ leaf: Int, last: String) -> String {
        let child = children[leaf]
        guard !child.attemptErrors.isEmpty else { return last }
        return (child.attemptErrors + ["attempt \(child.attempt): \(last)"]).joined(separator: "; ")
    }

    /// The leaf's input with its producers' outputs injected, or why it cannot be built.
    func injectedInput(_ leaf: Int) -> Result<JSONValue, InjectionFailure> {
        var input = flat.leaves[leaf].input
        for injection in flat.leaves[leaf].inject {
            let selected: JSONValue
            if let producers = injection.gathers {
                // A fan-out: it must have succeeded (a map that ended without procedures may
                // have failed or been skipped); then each procedure's selected output, in
                // order, as one list.
                if let group = injection.fanOutGroup, groups[group].phase != .succeeded || groups[group].wasSkipped {
                    let path = injection.producerPath
                    switch groups[group].phase {
                    case .failed: return .failure(InjectionFailure(.producerFailed(path: path)))
                    case .succeeded: return .failure(InjectionFailure(.skipped("producer \"\(path)\" was skipped")))
                    default: return .failure(InjectionFailure(.producerCancelled(path: path)))
                    }
                }
                var list: [JSONValue] = []
                list.reserveCapacity(producers.count)
                for producer in producers {
                    switch selectedOutput(of: producer, injection.select) {
                    case .success(let value): list.append(value)
                    case .failure(let failure): return .failure(failure)
                    }
                }
                selected = .array(list)
            } else {
                switch selectedOutput(of: injection.producer, injection.select) {
                case .success(let value): selected = value
                case .failure(let failure): return .failure(failure)
                }
            }
            input.set(injection.into, to: selected)
        }
        return .success(input)
    }

    /// What `select` picks from the output of `producer`, which must have succeeded.
    private func selectedOutput(of producer: Int, _ select: JSONPath) -> Result<JSONValue, InjectionFailure> {
        let path = flat.leaves[producer].path
        switch children[producer].phase {
        case .succeeded: break
        case .failed: return .failure(InjectionFailure(.producerFailed(path: path)))
        case .skipped: return .failure(InjectionFailure(.skipped("producer \"\(path)\" was skipped")))
        default: return .failure(InjectionFailure(.producerCancelled(path: path)))
        }
        let output: JSONValue
        do {
            output = try JSONValue(jsonData: children[producer].output ?? Data("null".utf8))
        } catch {
            return .failure(.init(.failed, "producer \"\(path)\" returned output that is not JSON"))
        }
        guard let selected = output.select(select) else {
            return .failure(.init(.failed, "producer \"\(path)\" output has nothing at \"\(select)\""))
        }
        return .success(selected)
    }

    /// How group `group` ends once every procedure in it has: cancelled if it was cancelled,
    /// else failed if anything failed, else cancelled if anything was, else succeeded.
    func outcome(ofGroup group: Int) -> GroupPhase {
        let state = groups[group]
        return state.cancelReason != nil
            ? .cancelled : state.failed > 0 ? .failed : state.cancelled > 0 ? .cancelled : .succeeded
    }

    /// The reason of a run that ended cancelled without being cancelled itself: its first
    /// cancelled child's.
    func firstCancellation() -> String? {
        guard let leaf = children.indices.first(where: { children[$0].phase == .cancelled }) else { return nil }
        return "\"\(flat.leaves[leaf].path)\" was cancelled: \(children[leaf].error ?? "no reason given")"
    }
}

extension GroupPlan {
    /// Whether group `inner` is inside group `outer`.
    func isWithin(_ inner: Int, _ outer: Int) -> Bool {
        var current: Int? = flat.groups[inner].parent
        while let index = current {
            if index == outer { return true }
            current = flat.groups[index].parent
        }
        return false
    }
}

/// Why a consumer's input could not be built.
struct InjectionFailure: Error {
    var phase: ChildPhase
    var message: String
    /// Why the consumer is cancelled (`phase` cancelled).
    var reason: CancellationReason?

    init(_ phase: ChildPhase, _ message: String) {
        self.phase = phase
        self.message = message
    }

    /// The consumer is cancelled for `reason`.
    init(_ reason: CancellationReason) {
        self.init(.cancelled, reason.text)
        self.reason = reason
    }
}

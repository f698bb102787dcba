import CohortSpec
import Foundation

/// Conditions (`if:`, `require:`) and `repeat:`: evaluated by the coordinator, never by a worker.
///
/// A leaf's conditions and those of its enclosing nested groups are evaluated when the leaf's
/// dependencies have all finished, before injection and before any lock is asked for (a
/// group's when its first leaf gets there, before its hold). Outcomes:
/// - `if` false: the node does not run and ends `skipped` (a group: everything in it);
/// - `require` false, or an expression that cannot be evaluated: it fails, naming the
///   expression (a group: everything in it fails with that error);
/// - otherwise it goes on, and is never evaluated again (retries do not re-evaluate).
extension Scheduler {
    /// What a node's conditions say.
    enum ConditionDecision {
        case run
        case skip(String)
        case fail(String)
    }

    /// Evaluates the conditions of the leaf's enclosing groups (outermost first), then its own.
    /// Returns whether the leaf goes on; if not, it (or its group) has finished.
    mutating func passConditions(_ runIndex: Int, _ leaf: Int, now: Timestamp) -> Bool {
        guard let plan = runs[runIndex]?.plan else { return false }
        runs[runIndex]?.children[leaf].conditionsChecked = true
        let flatLeaf = plan.flat.leaves[leaf]
        for group in flatLeaf.ancestors where group != 0 {
            guard runs[runIndex]?.groups[group].conditionChecked == false else { continue }
            runs[runIndex]?.groups[group].conditionChecked = true
            let flatGroup = plan.flat.groups[group]
            guard flatGroup.condition != nil || flatGroup.requirement != nil else { continue }
            switch decide(runIndex, condition: flatGroup.condition, requirement: flatGroup.requirement) {
            case .run:
                continue
            case .skip(let why):
                let reason = CancellationReason.skipped("group \"\(flatGroup.path)\" was skipped: \(why)")
                for inner in flatGroup.leaves where runs[runIndex]?.children[inner].isDone == false {
                    finishLeaf(runIndex, inner, .skipped, reason: reason, now: now)
                }
                return false
            case .fail(let why):
                for inner in flatGroup.leaves where runs[runIndex]?.children[inner].isDone == false {
                    finishLeaf(runIndex, inner, .failed, message: "group \"\(flatGroup.path)\": \(why)", now: now)
                }
                return false
            }
        }
        guard flatLeaf.condition != nil || flatLeaf.requirement != nil else { return true }
        switch decide(runIndex, condition: flatLeaf.condition, requirement: flatLeaf.requirement) {
        case .run:
            return true
        case .skip(let why):
            finishLeaf(runIndex, leaf, .skipped, reason: .skipped(why), now: now)
            return false
        case .fail(let why):
            finishLeaf(runIndex, leaf, .failed, message: why, now: now)
            return false
        }
    }

    /// `if` first (false: skip), then `require` (false: fail); an expression that cannot be
    /// evaluated fails.
    func decide(_ runIndex: Int, condition: FlatExpression?, requirement: FlatExpression?) -> ConditionDecision {
        if let condition {
            switch evaluate(runIndex, condition) {
            case .failure(let error): return .fail("if \"\(condition.text)\": \(error.message)")
            case .success(false): return .skip("if \"\(condition.text)\" was false")
            case .success(true): break
            }
        }
        if let requirement {
            switch evaluate(runIndex, requirement) {
            case .failure(let error): return .fail("require \"\(requirement.text)\": \(error.message)")
            case .success(false): return .fail("require \"\(requirement.text)\" was false")
            case .success(true): break
            }
        }
        return .run
    }

    /// Evaluates an expression against the run's finished children (and `ownOutput`).
    func evaluate(_ runIndex: Int, _ expression: FlatExpression, ownOutput: JSONValue? = nil)
        -> Result<Bool, ExpressionEvaluationError>
    {
        guard let run = runs[runIndex] else { return .failure(ExpressionEvaluationError("the group has finished")) }
        let context = RunExpressionContext(run: run, paths: expression.paths, ownOutput: ownOutput)
        do {
            return .success(try expression.expression.isTrue(in: context))
        } catch {
            return .failure(error)
        }
    }

    // MARK: Repeat

    /// A run of a repeating leaf succeeded with `output`: `until` true finishes it succeeded;
    /// false, it runs again after `every`, or fails once `max` runs are done.
    mutating func repeatOrFinish(
        _ runIndex: Int, _ leaf: Int, _ repeating: FlatRepeat, output: Data, at finishedAt: Timestamp?, now: Timestamp
    ) {
        guard let child = runs[runIndex]?.children[leaf] else { return }
        // `until` reads the run's output: output that is not JSON cannot be read, and says so
        // rather than passing for `null`.
        guard let value = try? JSONValue(jsonData: output) else {
            return finishLeaf(
                runIndex, leaf, .failed,
                message:
                    "repeat.until \"\(repeating.until.text)\": the run's output is not JSON, so `output` cannot be read",
                at: finishedAt, now: now)
        }
        let runsDone = Int(child.repeatedRuns) + 1
        switch evaluate(runIndex, repeating.until, ownOutput: value) {
        case .failure(let error):
            finishLeaf(
                runIndex, leaf, .failed, message: "repeat.until \"\(repeating.until.text)\": \(error.message)",
                at: finishedAt, now: now)
        case .success(true):
            finishLeaf(runIndex, leaf, .succeeded, output: output, at: finishedAt, now: now)
        case .success(false) where runsDone >= repeating.max:
            finishLeaf(
                runIndex, leaf, .failed,
                message:
                    "repeat: until \"\(repeating.until.text)\" was still false after \(runsDone) run\(runsDone == 1 ? "" : "s") (max \(repeating.max))",
                at: finishedAt, now: now)
        case .success(false):
            endForRetry(
                runIndex, leaf, child.attemptID, .repeated, message: "until \"\(repeating.until.text)\" was false",
                countsAsError: false, at: finishedAt, now: now)
            runs[runIndex]?.children[leaf].repeatedRuns = UInt32(runsDone)
            // Each run has its own retry budget.
            runs[runIndex]?.children[leaf].counted = 0
            runs[runIndex]?.children[leaf].repeatWait = true
            runs[runIndex]?.children[leaf].retryAt = now + repeating.every
            if repeating.every <= .zero {
                work.append(.unblocked(runIndex: runIndex, leaf: leaf))
            } else {
                attempts.timers.schedule(
                    .retry(runIndex: runIndex, leaf: leaf, attempt: child.attempt), at: now + repeating.every)
            }
        }
    }
}

/// What an expression reads from a run: its children's states and outputs, by the names the
/// expression uses (resolved to paths when the spec was flattened).
struct RunExpressionContext: ExpressionContext {
    let run: GroupRun
    let paths: [String: String]
    let ownOutput: JSONValue?

    func state(of name: String) -> ExpressionChildState {
        guard let path = paths[name], let node = run.nodeByPath[path] else { return .unfinished }
        if node < run.leafCount {
            switch run.children[node].phase {
            case .succeeded: return .succeeded
            case .failed: return .failed
            case .cancelled: return .cancelled
            case .skipped: return .skipped
            default: return .unfinished
            }
        }
        let group = run.groups[node - run.leafCount]
        if group.wasSkipped { return .skipped }
        switch group.phase {
        case .succeeded: return .succeeded
        case .failed: return .failed
        case .cancelled: return .cancelled
        case .pending, .running: return .unfinished
        }
    }

    func output(of name: String) throws(ExpressionEvaluationError) -> JSONValue {
        guard let path = paths[name], let node = run.nodeByPath[path], node < run.leafCount else {
            throw ExpressionEvaluationError("outputs.\(name): \"\(name)\" names no procedure")
        }
        let child = run.children[node]
        guard child.phase == .succeeded else {
            let how = child.phase.isFinished ? "\(child.phase.rawValue)" : "has not finished"
            throw ExpressionEvaluationError("outputs.\(name): \"\(path)\" \(how) and has no output")
        }
        do {
            return try JSONValue(jsonData: child.output ?? Data("null".utf8))
        } catch {
            throw ExpressionEvaluationError("outputs.\(name): the output of \"\(path)\" is not JSON")
        }
    }
}

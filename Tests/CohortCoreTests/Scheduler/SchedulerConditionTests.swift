import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// `if:`, `require:` and `repeat:` in the scheduler (docs/spec.md, "Conditions" and "Repeat").
@Suite struct SchedulerConditionTests {
    @Test func aFalseIfSkipsTheChildAndItsDependentsAndTheGroupSucceeds() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: build, run: echo }
                  - { name: deploy, run: echo, if: "failed(build)" }
                  - { name: notify, run: echo, after: [deploy] }
                  - { name: report, run: echo, after: [deploy], if: "skipped(deploy)" }
                """, id: "g")
        try h.succeed("build")
        #expect(h.dispatches.map(\.order.ref.path).sorted() == ["build", "report"])
        #expect(try h.child("g", "deploy").phase == .skipped)
        #expect(try h.child("g", "deploy").error == "if \"failed(build)\" was false")
        #expect(try h.child("g", "notify").phase == .skipped)
        #expect(try h.child("g", "notify").error == "dependency \"deploy\" was skipped")
        #expect(try h.child("g", "deploy").attempt == 0)
        try h.succeed("report")
        #expect(h.finished["g"]?.phase == .succeeded)
        let result = try h.scheduler.result("g", path: "deploy")
        #expect(result == .cancelled(reason: .skipped("if \"failed(build)\" was false")))
    }

    @Test func anIfOverridesFailurePropagation() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: deploy, run: echo }
                  - { name: smoke, run: echo, after: [deploy] }
                  - { name: cleanup, run: echo, after: [deploy], if: "failed(deploy)" }
                  - { name: always, run: echo, after: [smoke], if: "always()" }
                """, id: "g")
        try h.fail("deploy")
        #expect(try h.child("g", "smoke").phase == .cancelled)
        #expect(h.runningPaths == ["always", "cleanup"])
        try h.succeed("cleanup")
        try h.succeed("always")
        #expect(h.finished["g"]?.phase == .failed)
    }

    @Test func anIfThatIsFalseAfterAFailureSkipsRatherThanCancels() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: a, run: echo }
                  - { name: b, run: echo, if: "succeeded(a)" }
                """, id: "g")
        try h.fail("a")
        #expect(try h.child("g", "b").phase == .skipped)
        #expect(h.finished["g"]?.phase == .failed)
    }

    @Test func aFalseRequireFailsTheChildWithTheExpression() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: check, run: echo }
                  - { name: deploy, run: echo, require: "outputs.check.ok == true" }
                  - { name: after-deploy, run: echo, after: [deploy] }
                """, id: "g")
        try h.succeed("check", output: ["ok": false])
        let deploy = try h.child("g", "deploy")
        #expect(deploy.phase == .failed)
        #expect(deploy.error == "require \"outputs.check.ok == true\" was false")
        #expect(try h.child("g", "after-deploy").phase == .cancelled)
        #expect(h.finished["g"]?.phase == .failed)
        #expect(h.finished["g"]?.reason?.contains("require \"outputs.check.ok == true\" was false") == true)
    }

    @Test func aTrueRequireLetsTheChildRunAndAMissingOutputPathFailsIt() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: check, run: echo }
                  - { name: ok, run: echo, require: "outputs.check.ok == true && contains(outputs.check.tags, 'prod')" }
                  - { name: missing, run: echo, if: "outputs.check.version > 2" }
                """, id: "g")
        try h.succeed("check", output: ["ok": true, "tags": ["dev", "prod"]])
        #expect(h.runningPaths == ["ok"])
        let missing = try h.child("g", "missing")
        #expect(missing.phase == .failed)
        #expect(
            missing.error
                == "if \"outputs.check.version > 2\": outputs.check.version: the output of \"check\" has nothing at \"version\""
        )
    }

    @Test func aNestedGroupWithAFalseIfIsSkippedWhole() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: build, run: echo }
                  - name: release
                    if: "outputs.build.publish == true"
                    exclusive: [registry]
                    group:
                      children:
                        - { name: push, run: echo }
                        - { name: tag, run: echo, after: [push] }
                  - { name: announce, run: echo, after: [release] }
                  - { name: log, run: echo, after: [release], if: "skipped(release)" }
                """, id: "g")
        try h.succeed("build", output: ["publish": false])
        #expect(try h.child("g", "release").phase == .skipped)
        #expect(try h.child("g", "release/push").phase == .skipped)
        #expect(try h.child("g", "release/tag").phase == .skipped)
        #expect(try h.child("g", "announce").phase == .skipped)
        // The group never asked for its hold.
        #expect(h.scheduler.lockSnapshot().isEmpty)
        #expect(h.runningPaths == ["log"])
        try h.succeed("log")
        #expect(h.finished["g"]?.phase == .succeeded)
    }

    @Test func aNestedGroupWithAnIfRunsAfterAFailedDependency() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: deploy, run: echo }
                  - name: rollback
                    after: [deploy]
                    if: "failed(deploy)"
                    group:
                      children:
                        - { name: restore, run: echo }
                        - { name: verify, run: echo, after: [restore] }
                """, id: "g")
        try h.fail("deploy")
        #expect(h.runningPaths == ["rollback/restore"])
        try h.succeed("rollback/restore")
        try h.succeed("rollback/verify")
        #expect(try h.child("g", "rollback").phase == .succeeded)
        #expect(h.finished["g"]?.phase == .failed)
    }

    @Test func groupCancellationIsFinalWhateverTheIf() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: a, run: sleep, with: { seconds: 1 } }
                  - { name: cleanup, run: echo, after: [a], if: "always()" }
                """, id: "g")
        h.record(try h.scheduler.cancelGroup("g", reason: "stop", now: h.now))
        try h.acknowledgeCancels()
        #expect(try h.child("g", "cleanup").phase == .cancelled)
        #expect(h.finished["g"]?.phase == .cancelled)
        #expect(h.dispatches.count == 1)
    }

    // MARK: Repeat

    @Test func aRepeatRunsAgainAfterEveryUntilItsConditionHolds() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: poll, run: echo, repeat: { until: "output.healthy == true", max: 5, every: 5s } }
                  - { name: next, run: echo, after: [poll] }
                """, id: "g")
        try h.succeed("poll", output: ["healthy": false])
        #expect(h.running.isEmpty)
        let waiting = try h.child("g", "poll")
        #expect(waiting.phase == .waiting)
        #expect(
            waiting.waitingReason == "repeating after run 1 of at most 5: until \"output.healthy == true\" was false")
        #expect(waiting.earlierAttempts.map(\.ending) == [.repeated])
        h.advance(.seconds(4))
        #expect(h.running.isEmpty)
        h.advance(.seconds(1))
        #expect(h.attempt("poll")?.ref.attempt == 2)
        try h.succeed("poll", output: ["healthy": true, "run": 2])
        let poll = try h.child("g", "poll")
        #expect(poll.phase == .succeeded)
        #expect(poll.attempt == 2)
        #expect(
            try h.scheduler.result("g", path: "poll")
                == .succeeded(output: (["healthy": true, "run": 2] as JSONValue).jsonData()))
        #expect(h.runningPaths == ["next"])
    }

    @Test func aRepeatFailsOnceMaxRunsAreDone() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: poll, run: echo, repeat: { until: "output.done", max: 3 } }
                """, id: "g")
        for _ in 1...3 { try h.succeed("poll", output: ["done": false]) }
        #expect(h.dispatches.count == 3)
        let poll = try h.child("g", "poll")
        #expect(poll.phase == .failed)
        #expect(poll.error == "repeat: until \"output.done\" was still false after 3 runs (max 3)")
        #expect(h.finished["g"]?.phase == .failed)
    }

    @Test func aFailedRunOfARepeatIsRetriedWithItsOwnBudget() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: poll, run: echo, retry: 2, repeat: { until: "output.done", max: 3 } }
                """, id: "g")
        try h.fail("poll")
        try h.succeed("poll", output: ["done": false])
        try h.fail("poll")
        try h.succeed("poll", output: ["done": true])
        #expect(try h.child("g", "poll").phase == .succeeded)
        #expect(try h.child("g", "poll").attempt == 4)
    }
}

extension SchedulerConditionTests {
    /// In a sequence a skipped child does not skip the next one; a named dependency still does.
    @Test func aSequenceGoesOnPastASkippedChild() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4)
        try h.submit(
            yaml: """
                name: g
                mode: sequence
                children:
                  - { name: build, run: echo }
                  - { name: lint, run: echo, if: "failed(build)" }
                  - { name: test, run: echo }
                  - { name: report, run: echo, after: [lint] }
                """, id: "g")
        try h.succeed("build")
        #expect(try h.child("g", "lint").phase == .skipped)
        #expect(h.runningPaths == ["test"])
        try h.succeed("test")
        #expect(try h.child("g", "report").phase == .skipped)
        #expect(h.finished["g"]?.phase == .succeeded)
    }

    /// The next child in a sequence that also names its skipped predecessor (in `after`, or in
    /// an expression) is skipped: naming it is more than following it.
    @Test func theNextChildInASequenceThatNamesTheSkippedOneIsSkipped() throws {
        for next in ["{ name: b, run: echo, after: [a] }", "{ name: b, run: echo, require: \"succeeded(a)\" }"] {
            var h = SchedulerHarness()
            h.addWorker(1, slots: 4)
            try h.submit(
                yaml: """
                    name: g
                    mode: sequence
                    children:
                      - { name: a, run: echo, if: "false" }
                      - \(next)
                    """, id: "g")
            #expect(try h.child("g", "a").phase == .skipped)
            #expect(try h.child("g", "b").phase == .skipped, "\(next)")
            #expect(h.runningPaths.isEmpty)
            #expect(h.finished["g"]?.phase == .succeeded, "\(next)")
        }
    }

    /// `repeat.until` reads the run's output: output that is not JSON fails the child naming
    /// why, rather than passing for `null`.
    @Test func aRepeatOverOutputThatIsNotJSONFailsNamingIt() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 1)
        try h.submit(
            yaml: """
                name: g
                children:
                  - { name: poll, run: echo, repeat: { until: "output == null", max: 3 } }
                """, id: "g")
        let order = try #require(h.attempt("poll"))
        try h.finish(order, .succeeded(output: Data("not json".utf8)))
        let child = try h.child("g", "poll")
        #expect(child.phase == .failed)
        #expect(child.error?.contains("not JSON") == true, "\(child.error ?? "")")
    }
}

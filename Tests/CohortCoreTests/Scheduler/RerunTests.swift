import CohortSpec
import Foundation
import Testing

@testable import CohortCore

/// `cohort rerun`: a new run of the same spec starts the procedures that succeeded before (and
/// wait for nothing that runs again) succeeded with their earlier output.
@Suite struct RerunTests {
    static let spec = """
        name: release
        children:
          - { name: fetch, run: echo }
          - { name: build, run: echo, after: [fetch] }
          - { name: test, run: echo, after: [build] }
          - { name: docs, run: echo, after: [fetch] }
          - { name: publish, run: echo, inject: [{ from: docs, select: url, into: url }] }
          - name: checks
            group:
              mode: sequence
              children:
                - { name: lint, run: echo }
                - { name: audit, run: echo }
          - { name: notify, run: echo, after: [checks] }
        """

    func output(_ value: JSONValue) -> Data { value.jsonData() }

    @Test func whatFailedRunsAgainWithWhatComesAfterItAndTheRestIsReused() throws {
        var h = SchedulerHarness()
        _ = h.addWorker(1, slots: 16)
        let spec = try SpecParser.parse(text: Self.spec, sourceName: "r.yaml")
        // The earlier run: build failed (so test never ran), audit failed; the rest succeeded.
        let earlier: [String: Data] = [
            "fetch": output(["v": 1]), "docs": output(["url": "https://docs/1"]), "publish": output(["done": true]),
            "checks/lint": output(["ok": true]),
        ]
        let receipt = try h.scheduler.submit(spec, id: "again", reusing: earlier, now: h.now)
        h.record(receipt.actions)
        #expect(receipt.reused == 4)
        for path in ["fetch", "docs", "publish", "checks/lint"] {
            let child = try h.child("again", path)
            #expect(child.phase == .succeeded, "\(path)")
            #expect(child.attempt == 0, "\(path) never ran")
        }
        // build waits for nothing that runs again: it runs at once, and audit after reused lint.
        #expect(h.runningPaths == ["build", "checks/audit"])
        let fetched = try h.scheduler.result("again", path: "fetch")
        #expect(fetched == .succeeded(output: output(["v": 1])))

        try h.succeed("build")
        #expect(h.runningPaths == ["checks/audit", "test"])
        try h.succeed("test")
        try h.succeed("checks/audit")
        try h.succeed("notify")
        #expect(h.finished["again"]?.phase == .succeeded)
    }

    @Test func aReusedProducersOutputIsInjectedAndAProducerThatRunsAgainTakesItsConsumerAlong() throws {
        var h = SchedulerHarness()
        _ = h.addWorker(1, slots: 16)
        let spec = try SpecParser.parse(
            text: """
                name: chain
                children:
                  - { name: produce, run: echo }
                  - { name: consume, run: echo, inject: [{ from: produce, select: value, into: got }] }
                  - { name: other, run: echo }
                  - { name: last, run: echo, inject: [{ from: other, select: value, into: got }] }
                """, sourceName: "c.yaml")
        // produce and consume succeeded; other was cancelled, so last, which injects its
        // output, runs again even though it succeeded.
        let earlier: [String: Data] = [
            "produce": output(["value": 42]), "consume": output(["got": 42]), "last": output(["got": 0]),
        ]
        let receipt = try h.scheduler.submit(spec, id: "c2", reusing: earlier, now: h.now)
        h.record(receipt.actions)
        #expect(receipt.reused == 2)
        #expect(h.runningPaths == ["other"])
        try h.succeed("other", output: ["value": 7])
        #expect(try h.input(of: "last") == ["got": 7])
    }

    @Test func reusedChildrenAreJournaledAsSucceededWithoutAnAttempt() throws {
        var h = SchedulerHarness()
        h.scheduler.emitsRecords = true
        _ = h.addWorker(1)
        let spec = try SpecParser.parse(
            text: "name: j\nchildren: [{ name: a, run: echo }, { name: b, run: echo, after: [a] }]\n", sourceName: nil)
        let receipt = try h.scheduler.submit(spec, id: "j2", reusing: ["a": output(["x": 1])], now: h.now)
        let records = receipt.actions.compactMap { action -> JournalRecord? in
            if case .record(let record) = action { return record }
            return nil
        }
        guard case .submitted(let id, _, _, _)? = records.first else {
            Issue.record("the submission is recorded first: \(records)")
            return
        }
        #expect(id == "j2")
        let finished = records.compactMap { record -> ChildRecord? in
            if case .finished(let child) = record { return child }
            return nil
        }
        #expect(finished.map(\.path) == ["a"])
        #expect(finished.first?.attempt == 0)
        #expect(finished.first?.state == .finished(.succeeded))
        #expect(finished.first?.output == output(["x": 1]))
    }
}

import CohortSpec
import Testing

@testable import CohortCore

@Suite struct InjectionTests {
    @Test func selectedOutputIsWrittenIntoTheConsumersInputBeforeDispatch() throws {
        var h = SchedulerHarness()
        h.addWorker(1, slots: 4, labels: ["x"])
        h.addWorker(2, slots: 4, labels: ["y"])
        try h.submit(
            GroupSpec(
                "g",
                children: [
                    leaf("version", requires: ["x"]),
                    leaf("checkout", requires: ["x"]),
                    leaf(
                        "build", "shell", with: ["command": ["sh", "-c", "cat"], "env": ["KEEP": "1"]], requires: ["y"],
                        inject: [
                            Injection(from: "version", select: "value", into: "env.VERSION"),
                            Injection(from: "checkout", select: "stdout", into: "stdin"),
                        ]),
                ]), id: "g")
        #expect(h.attempt("build") == nil)
        try h.succeed("version", output: ["value": "1.2.3"])
        #expect(h.attempt("build") == nil)
        try h.succeed("checkout", output: ["stdout": "abc123\n", "exitCode": 0])
        let build = try #require(h.attempt("build"))
        #expect(h.running[build.ref.id]?.worker == SessionID(2))
        #expect(
            try JSONValue(jsonData: build.input)
                == ["command": ["sh", "-c", "cat"], "env": ["KEEP": "1", "VERSION": "1.2.3"], "stdin": "abc123\n"])
    }

    @Test func wholeOutputReplacesWholeInputByDefault() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(
            GroupSpec("g", children: [leaf("p"), leaf("c", with: ["old": true], inject: [Injection(from: "p")])]),
            id: "g")
        try h.succeed("p", output: ["new": [1, 2]])
        #expect(try h.input(of: "c") == ["new": [1, 2]])
    }

    @Test func aFailedProducerCancelsItsConsumerNamingIt() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(
            GroupSpec(
                "g", onChildFailure: .continue,
                children: [
                    leaf("producer"), leaf("consumer", inject: [Injection(from: "producer", select: "x", into: "y")]),
                ]), id: "g")
        try h.fail("producer")
        let consumer = try h.child("g", "consumer")
        #expect(consumer.phase == .cancelled)
        #expect(consumer.error == "producer \"producer\" failed")
        #expect(h.finished["g"]?.phase == .failed)
    }

    @Test func aCancelledProducerCancelsItsConsumerNamingIt() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(
            GroupSpec(
                "g", onChildFailure: .continue,
                children: [
                    leaf("p"), leaf("c", inject: [Injection(from: "p")]),
                ]), id: "g")
        h.record(try h.scheduler.cancelChild("g", path: "p", reason: "stop", now: h.now))
        try h.acknowledgeCancels()
        #expect(try h.child("g", "c").error == "producer \"p\" was cancelled")
    }

    @Test func aSelectThatFindsNothingFailsTheConsumerNamingProducerAndPath() throws {
        var h = SchedulerHarness()
        h.addWorker(1)
        try h.submit(
            GroupSpec("g", children: [leaf("p"), leaf("c", inject: [Injection(from: "p", select: "missing.value")])]),
            id: "g")
        try h.succeed("p", output: ["other": 1])
        let consumer = try h.child("g", "c")
        #expect(consumer.phase == .failed)
        #expect(consumer.error == "producer \"p\" output has nothing at \"missing.value\"")
    }
}

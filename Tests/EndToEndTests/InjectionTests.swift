import Foundation
import Testing

extension EndToEnd {
    @Suite struct Injection {
        /// A producer pinned to worker X, a consumer pinned to worker Y: the consumer receives
        /// the value selected from the producer's output.
        @Test func consumerOnAnotherWorkerReceivesTheSelectedValue() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "x", labels: ["x"])
            try cluster.addWorker(name: "y", labels: ["y"])
            try cluster.addWorker(name: "z", labels: ["z"])

            let secret = "v-\(UUID().uuidString.prefix(8))"
            let spec = """
                name: inject
                children:
                  - name: produce
                    run: echo
                    requires: [x]
                    with: { build: { artifact: "\(secret)", size: 42 } }
                  - name: announce
                    run: shell
                    requires: [x]
                    with: { command: ["sh", "-c", "printf '%s' \\"$COHORT_WORKER\\""] }
                  - name: consume
                    run: echo
                    requires: [y]
                    inject:
                      - { from: produce, select: build.artifact, into: received.artifact }
                      - { from: announce, select: stdout, into: received.from }
                    with: { note: "kept" }
                """
            let (status, final) = try cluster.submitAndWait(spec, name: "inject.yaml")
            #expect(status == 0, "\(final)")
            #expect(final.child("produce")?["worker"] as? String == "x")
            #expect(final.child("consume")?["worker"] as? String == "y")

            let group = try #require(final["id"] as? String)
            let result = try cluster.cli(["result", group, "consume", "--json"])
            #expect(result.status == 0, "\(result)")
            let output = try JSON.object(result.stdout)
            let received = output["received"] as? [String: Any]
            #expect(received?["artifact"] as? String == secret)
            #expect(received?["from"] as? String == "x")
            #expect(output["note"] as? String == "kept")
        }

        /// A failing producer cancels its consumer, with a reason naming the producer.
        @Test func failingProducerCancelsTheConsumerNamingIt() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorker(name: "x", labels: ["x"])
            try cluster.addWorker(name: "y", labels: ["y"])

            let spec = """
                name: broken
                children:
                  - name: flaky-producer
                    run: fail
                    requires: [x]
                    with: { message: "no artifact today" }
                  - name: consume
                    run: echo
                    requires: [y]
                    inject:
                      - { from: flaky-producer, select: value, into: value }
                  - name: bystander
                    run: echo
                    with: { fine: true }
                """
            let (status, final) = try cluster.submitAndWait(spec, name: "broken.yaml")
            #expect(status == 1, "the group failed: \(final)")
            #expect(final.state == "failed")
            let producer = try #require(final.child("flaky-producer"))
            #expect(producer.state == "failed")
            #expect((producer["error"] as? String)?.contains("no artifact today") == true)
            let consumer = try #require(final.child("consume"))
            #expect(consumer.state == "cancelled")
            #expect(consumer["startedAt"] is NSNull, "the consumer never started")
            #expect(
                (consumer["error"] as? String)?.contains("flaky-producer") == true,
                "reason names the producer: \(consumer)")
            #expect(final.child("bystander")?.state == "succeeded")
        }
    }
}

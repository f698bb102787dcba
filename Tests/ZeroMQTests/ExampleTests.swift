import CohortTestSupport
import Testing

@testable import ZeroMQ

/// The ROUTER loop shown in `Poller`'s documentation, run for real.
@Suite struct ExampleTests {
    typealias Outgoing = (id: [UInt8], frames: [[UInt8]])

    @Test func theDocumentedRouterLoopServesRequestsAndPostedReplies() throws {
        let context = try Context()
        let outbox = try Mailbox<Outgoing>()
        let handled = Locked<[String]>([])
        let endpoint = Locked("")
        let bound = TestThread.Signal()

        let loop = TestThread {
            do throws(ZeroMQError) {
                let router = try context.socket(.router)
                try router.set(.routerMandatory, to: true)
                try router.bind("tcp://127.0.0.1:*")
                endpoint.value = try router.lastEndpoint
                bound.signal()
                let poller = Poller()
                let network = try poller.register(router)
                let wakeups = poller.register(outbox.waker)
                while true {
                    do throws(ZeroMQError) {
                        try poller.poll(timeout: .milliseconds(100))
                    } catch  where error.isTerminated {
                        break
                    }
                    if poller.isReadable(network) {
                        while let message = try router.receiveWithUserID(wait: .never) {
                            // handle(...): hand the request to another thread, which posts the reply.
                            handled.mutate { $0.append(String(decoding: message.frames[1], as: UTF8.self)) }
                            let id = message.frames[0]
                            let reply = Array("re: ".utf8) + message.frames[1]
                            TestThread { outbox.post((id, [reply])) }.detach()
                        }
                    }
                    if poller.isReadable(wakeups) {
                        for (id, frames) in outbox.drain() {
                            try router.send(to: id, frames)
                        }
                    }
                }
                router.close()
            } catch {
                handled.mutate { $0.append("loop failed: \(error)") }
                bound.signal()
            }
        }

        #expect(bound.wait())
        let client = try context.socket(.dealer)
        try client.connect(endpoint.value)
        for index in 0..<3 {
            try client.send([Array("request \(index)".utf8)])
            let reply = try #require(try client.receiveFrames(wait: .upTo(Deadline.event)))
            #expect(reply == [Array("re: request \(index)".utf8)])
        }
        client.close()
        try context.shutdown()
        #expect(loop.join())
        #expect(handled.value == ["request 0", "request 1", "request 2"])
    }
}

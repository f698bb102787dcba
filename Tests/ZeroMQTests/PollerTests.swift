import CohortTestSupport
import Synchronization
import Testing

@testable import ZeroMQ

@Suite struct PollerTests {
    @Test func pollTimesOutWithNothingReadyAfterAboutTheTimeout() throws {
        let context = try Context()
        let socket = try context.socket(.pull)
        try socket.bind("inproc://poll-timeout")
        let poller = Poller()
        let index = try poller.register(socket)

        var ready = -1
        let waited = try elapsed { ready = try poller.poll(timeout: .milliseconds(100)) }
        #expect(ready == 0)
        #expect(!poller.isReadable(index))
        #expect(waited >= .milliseconds(95))
        #expect(waited < .seconds(2))
    }

    @Test func pollReportsTheReadySocketAmongSeveral() throws {
        let context = try Context()
        let quiet = try context.socket(.pull)
        try quiet.bind("inproc://quiet")
        let busy = try context.socket(.pull)
        try busy.bind("inproc://busy")
        let push = try context.socket(.push)
        try push.connect("inproc://busy")
        let poller = Poller()
        let quietIndex = try poller.register(quiet)
        let busyIndex = try poller.register(busy)

        try push.send([[UInt8]("go")])
        #expect(try poller.poll(timeout: Deadline.event) == 1)
        #expect(poller.isReadable(busyIndex))
        #expect(!poller.isReadable(quietIndex))
        #expect(try busy.receiveFrames(wait: .never) == [[UInt8]("go")])
    }

    @Test func pollReportsWritableWhenAsked() throws {
        let context = try Context()
        let pull = try context.socket(.pull)
        try pull.bind("inproc://writable")
        let push = try context.socket(.push)
        try push.connect("inproc://writable")
        let poller = Poller()
        let index = try poller.register(push, for: [])
        #expect(try poller.poll(timeout: .milliseconds(10)) == 0)
        poller.setEvents(.writable, at: index)
        #expect(try poller.poll(timeout: Deadline.event) == 1)
        #expect(poller.isWritable(index))
    }

    @Test func wakerWakesAPollAndResetClearsIt() throws {
        let waker = try Waker()
        let poller = Poller()
        let index = poller.register(waker)
        #expect(try poller.poll(timeout: .milliseconds(10)) == 0)

        waker.wake()
        waker.wake()
        #expect(try poller.poll(timeout: Deadline.event) == 1)
        #expect(poller.isReadable(index))
        waker.reset()
        #expect(try poller.poll(timeout: .milliseconds(10)) == 0, "two wakes fold into one reset")
    }

    @Test func wakeFromAnotherThreadEndsABlockingPoll() throws {
        let waker = try Waker()
        let poller = Poller()
        let index = poller.register(waker)
        let waking = TestThread { waker.wake() }
        #expect(try poller.poll(timeout: Deadline.event) == 1)
        #expect(poller.isReadable(index))
        #expect(waking.join())
    }
}

@Suite struct HandOffTests {
    /// Another thread posts work and wakes the loop; only the loop touches its
    /// socket, and every item arrives, in order.
    @Test func workPostedFromAnotherThreadIsSentByTheOwningLoop() throws {
        let context = try Context()
        let router = try context.socket(.router)
        let endpoint = try router.bindLoopback()
        let mailbox = try Mailbox<[UInt8]>()
        let dealer = try context.socket(.dealer)  // created here, handed to the loop
        let loopError = Locked<ZeroMQError?>(nil)
        let sentByLoopThread = Locked(0)
        let count = 500

        let loop = TestThread {
            dealer.adopt()
            do throws(ZeroMQError) {
                try dealer.connect(endpoint)
                let poller = Poller()
                let wakeIndex = poller.register(mailbox.waker)
                loop: while true {
                    try poller.poll(timeout: Deadline.event)
                    guard poller.isReadable(wakeIndex) else { continue }
                    for item in mailbox.drain() {
                        if item.isEmpty { break loop }
                        #expect(dealer.isOwnedByCurrentThread)
                        try dealer.send([item])
                        sentByLoopThread.mutate { $0 += 1 }
                    }
                }
                dealer.close()
            } catch {
                loopError.value = error
            }
        }
        let producer = TestThread {
            for index in 0..<count { mailbox.post([UInt8]("item \(index)")) }
            mailbox.post([])  // stop
        }

        for index in 0..<count {
            let frames = try #require(try router.receiveFrames(wait: .upTo(Deadline.event)))
            #expect(frames.count == 2)
            #expect(frames[1] == [UInt8]("item \(index)"))
        }
        #expect(producer.join())
        #expect(loop.join())
        #expect(loopError.value == nil)
        #expect(sentByLoopThread.value == count)
    }
}

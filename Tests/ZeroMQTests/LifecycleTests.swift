import CohortTestSupport
import Dispatch
import Testing

@testable import ZeroMQ

@Suite struct LifecycleTests {
    @Test func socketsGetABoundedLingerByDefault() throws {
        let context = try Context(defaultLinger: .milliseconds(250))
        let socket = try context.socket(.dealer)
        #expect(try socket.get(.linger) == .milliseconds(250))
        #expect(try Context().socket(.push).get(.linger) == .milliseconds(100))
    }

    @Test func closingWithUnsentMessagesToADeadPeerThenTerminatingDoesNotHang() throws {
        let context = try Context()
        // A port that nothing listens on: bind one, then let it go.
        let placeholder = try context.socket(.pull)
        let deadEndpoint = try placeholder.bindLoopback()
        placeholder.close()

        let push = try context.socket(.push)
        try push.connect(deadEndpoint)
        for index in 0..<100 {
            #expect(try push.send([[UInt8]("unsent \(index)")], wait: .never))
        }
        let closing = TestThread {
            push.adopt()
            push.close()
            context.terminate()
        }
        #expect(closing.join(timeout: .seconds(5)), "close + terminate must not wait for the dead peer")
    }

    @Test func shutdownEndsABlockingReceiveOnAnotherThreadCleanly() throws {
        let context = try Context()
        let pull = try context.socket(.pull)
        try pull.bind("inproc://blocked")
        let push = try context.socket(.push)
        try push.connect("inproc://blocked")
        let outcome = Locked("not started")
        let receiving = DispatchSemaphore(value: 0)
        let receiver = TestThread {
            pull.adopt()
            do throws(ZeroMQError) {
                _ = try pull.receiveFrames()  // "first": proves the thread is receiving
                outcome.value = "blocked"
                receiving.signal()
                _ = try pull.receiveFrames()  // nothing else comes: blocks until shutdown
                outcome.value = "received a second message"
            } catch  where error.isTerminated {
                outcome.value = "terminated after \(outcome.value)"
            } catch {
                outcome.value = "failed: \(error)"
            }
            pull.close()
        }
        try push.send([[UInt8]("first")])
        #expect(receiving.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(!receiver.join(timeout: .milliseconds(100)), "the second receive blocks")
        try context.shutdown()
        #expect(receiver.join(timeout: .seconds(5)))
        #expect(outcome.value == "terminated after blocked")

        push.close()
        let terminating = TestThread { context.terminate() }
        #expect(terminating.join(timeout: .seconds(5)))
    }

    @Test func pollAndSocketCreationAfterShutdownReportTermination() throws {
        let context = try Context()
        let socket = try context.socket(.pull)
        try socket.bind("inproc://after-shutdown")
        try context.shutdown()
        let poller = Poller()
        try poller.register(socket)
        let pollError = #expect(throws: ZeroMQError.self) { try poller.poll(timeout: Deadline.event) }
        #expect(pollError?.isTerminated == true)
        let createError = #expect(throws: ZeroMQError.self) { try context.socket(.push) }
        #expect(createError?.isTerminated == true)
    }

    @Test func aSocketBelongsToItsCreatorUntilAnotherThreadAdoptsIt() throws {
        let context = try Context()
        let socket = try context.socket(.dealer)
        #expect(socket.isOwnedByCurrentThread)

        let seenByOther = Locked<[Bool]>([])
        let other = TestThread {
            let before = socket.isOwnedByCurrentThread
            socket.adopt()
            seenByOther.value = [before, socket.isOwnedByCurrentThread]
        }
        #expect(other.join())
        #expect(seenByOther.value == [false, true], "a stranger is caught; an adopter owns it")
        #expect(!socket.isOwnedByCurrentThread, "the creator lost it by hand-off")
        socket.adopt()
        #expect(socket.isOwnedByCurrentThread)
    }
}

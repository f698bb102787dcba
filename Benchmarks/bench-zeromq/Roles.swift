import ZeroMQ

/// The far ends of the benchmarks. Each runs until its context shuts down
/// (thread mode) or its process is told to stop (process mode), and forwards
/// `Message` frames without copying their payloads.
enum Roles {
    /// ROUTER that echoes every message to its sender.
    static func echo(_ router: Socket) throws(ZeroMQError) {
        while true {
            guard let frames = try receiveOrEnd(router) else { return }
            try router.send(frames)
        }
    }

    /// DEALER that announces itself to the relay and echoes what it gets.
    static func worker(_ dealer: Socket) throws(ZeroMQError) {
        try dealer.send([Array("ready".utf8)])
        while true {
            guard let frames = try receiveOrEnd(dealer) else { return }
            try dealer.send(frames)
        }
    }

    /// Forwards client requests from the front ROUTER to the worker through
    /// the back ROUTER, and the worker's replies back: two hops each way.
    static func relay(front: Socket, back: Socket) throws(ZeroMQError) {
        try front.set(.routerMandatory, to: true)
        try back.set(.routerMandatory, to: true)
        // The worker says "ready" first, which tells the relay its routing id.
        guard let ready = try receiveOrEnd(back) else { return }
        let workerID = ready[0].bytes

        let poller = Poller()
        let frontIndex = try poller.register(front)
        let backIndex = try poller.register(back)
        do {
            while true {
                try poller.poll()
                if poller.isReadable(frontIndex) {
                    while let request = try front.receive(wait: .never) {  // [client id, payload…]
                        try back.send(bytes: workerID, more: true)
                        try back.send(request)
                    }
                }
                if poller.isReadable(backIndex) {
                    while let reply = try back.receive(wait: .never) {  // [worker id, client id, payload…]
                        try front.send(Array(reply.dropFirst()))
                    }
                }
            }
        } catch  where error.isTerminated {
            return
        }
    }

    /// A blocking receive; `nil` when the context was shut down.
    private static func receiveOrEnd(_ socket: Socket) throws(ZeroMQError) -> [Message]? {
        do {
            return try socket.receive()
        } catch  where error.isTerminated {
            return nil
        }
    }
}

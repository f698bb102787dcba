import ZeroMQ

/// Latency figures of a synchronous run, in microseconds.
struct Latency: Codable {
    var count: Int
    var p50Micros: Double
    var p99Micros: Double
    var meanMicros: Double
    var maxMicros: Double

    init(samples: [Duration]) {
        let nanos = samples.map { Double($0.components.seconds) * 1e9 + Double($0.components.attoseconds) / 1e9 }
            .sorted()
        count = nanos.count
        func percentile(_ p: Int) -> Double { nanos[min(nanos.count - 1, nanos.count * p / 100)] / 1000 }
        p50Micros = percentile(50)
        p99Micros = percentile(99)
        meanMicros = nanos.reduce(0, +) / Double(max(nanos.count, 1)) / 1000
        maxMicros = (nanos.last ?? 0) / 1000
    }
}

/// Throughput of a pipelined run.
struct Throughput: Codable {
    var messages: Int
    var window: Int
    var seconds: Double
    var roundTripsPerSecond: Double
}

enum Measure {
    /// Synchronous round trips on a DEALER: send, wait for the reply, repeat.
    static func roundTrips(_ dealer: Socket, payload: [UInt8], warmUp: Int, count: Int) throws(ZeroMQError) -> Latency {
        let clock = ContinuousClock()
        for _ in 0..<warmUp { try roundTrip(dealer, payload) }
        var samples: [Duration] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = clock.now
            try roundTrip(dealer, payload)
            samples.append(clock.now - start)
        }
        return Latency(samples: samples)
    }

    private static func roundTrip(_ dealer: Socket, _ payload: [UInt8]) throws(ZeroMQError) {
        try dealer.send(bytes: payload)
        guard let reply = try dealer.receiveFrames(), reply.last?.count == payload.count else {
            throw ZeroMQError(code: ZeroMQError.Code.invalidArgument, call: "bench: unexpected reply")
        }
    }

    /// Keeps up to `window` requests in flight until `total` replies are back.
    static func pipelined(_ dealer: Socket, payload: [UInt8], total: Int, window: Int) throws(ZeroMQError) -> Throughput
    {
        let clock = ContinuousClock()
        let reply = Message()
        var sent = 0
        var received = 0
        let start = clock.now
        while received < total {
            while sent < total, sent - received < window {
                guard try dealer.send(bytes: payload, wait: .never) else { break }
                sent += 1
            }
            // Block for one reply, then take whatever else is already there.
            try dealer.receive(into: reply)
            received += 1
            while received < sent, try dealer.receive(into: reply, wait: .never) { received += 1 }
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Throughput(
            messages: total, window: window, seconds: seconds, roundTripsPerSecond: Double(total) / seconds)
    }
}

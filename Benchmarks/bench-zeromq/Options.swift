/// Command-line settings of bench-zeromq.
struct Options {
    var json = false
    var processes = false
    var payloadBytes = 64
    var warmUp = 2_000
    var roundTrips = 20_000
    var pipelinedMessages = 200_000
    var window = 1_000
    /// Set when this process was spawned as one end of a benchmark.
    var role: String?
    var connect: String?

    static let usage = """
        usage: bench-zeromq [--json] [--processes] [--payload BYTES] [--warm-up N]
                            [--round-trips N] [--messages N] [--window N]

        Raw libzmq baselines over tcp://127.0.0.1 that Cohort's benchmarks divide by:
          1. ROUTER/DEALER synchronous round trip (p50/p99)
          2. two-hop relay client -> relay -> worker and back: synchronous p50/p99
             and pipelined round trips/s with a window of requests in flight
        --processes runs the echo server, relay and worker as separate processes
        (this binary with --role) instead of threads.
        """

    init(arguments: [String]) throws(UsageError) {
        var rest = arguments[...]
        func value(_ flag: String) throws(UsageError) -> String {
            guard let next = rest.popFirst() else { throw UsageError("\(flag) needs a value") }
            return next
        }
        func number(_ flag: String) throws(UsageError) -> Int {
            let text = try value(flag)
            guard let number = Int(text), number > 0 else {
                throw UsageError("\(flag): not a positive number: \(text)")
            }
            return number
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--json": json = true
            case "--processes": processes = true
            case "--payload": payloadBytes = try number(argument)
            case "--warm-up": warmUp = try number(argument)
            case "--round-trips": roundTrips = try number(argument)
            case "--messages": pipelinedMessages = try number(argument)
            case "--window": window = try number(argument)
            case "--role": role = try value(argument)
            case "--connect": connect = try value(argument)
            case "-h", "--help": throw UsageError(nil)
            default: throw UsageError("unknown argument \(argument)")
            }
        }
    }
}

struct UsageError: Error {
    var message: String?
    init(_ message: String?) { self.message = message }
}

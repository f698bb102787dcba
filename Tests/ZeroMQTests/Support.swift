@testable import ZeroMQ

// The ZeroMQ tests' own helpers; threads, signals, deadlines, `Locked` and `elapsed` are in
// CohortTestSupport.

extension Array where Element == UInt8 {
    init(_ string: String) { self = Array(string.utf8) }
}

extension Socket {
    /// Binds to a free loopback TCP port and returns the resolved endpoint.
    func bindLoopback() throws(ZeroMQError) -> String {
        try bind("tcp://127.0.0.1:*")
        return try lastEndpoint
    }
}

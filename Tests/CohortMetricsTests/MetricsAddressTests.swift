import Testing

@testable import CohortMetrics

@Suite struct MetricsAddressTests {
    @Test(arguments: [
        ("127.0.0.1:9470", "127.0.0.1", 9470), ("0.0.0.0:0", "0.0.0.0", 0), ("localhost:80", "localhost", 80),
        ("[::1]:9471", "::1", 9471), (" 127.0.0.1:9470 ", "127.0.0.1", 9470),
    ])
    func hostAndPortAreRead(text: String, host: String, port: Int) throws {
        let address = try #require(try MetricsAddress.parse(text))
        #expect(address.host == host && address.port == port)
    }

    @Test(arguments: ["off", "OFF", "none", "false"])
    func offTurnsMetricsOff(text: String) throws {
        #expect(try MetricsAddress.parse(text) == nil)
    }

    @Test(arguments: [
        ("9470", "no :PORT"), ("127.0.0.1", "no :PORT"), ("127.0.0.1:http", "is not a number"),
        ("127.0.0.1:70000", "is not a number from 0 to 65535"), (":9470", "the host is empty"),
        ("::1:9470", "in brackets"), ("[::1]9470", "no :PORT after"), ("http://127.0.0.1:9470", "not a host name"),
        ("", "empty"),
    ])
    func aBadAddressSaysWhatIsWrong(text: String, expected: String) {
        #expect {
            _ = try MetricsAddress.parse(text)
        } throws: { error in
            let message = "\(error)"
            return message.contains(expected) && message.contains("invalid metrics address \"\(text)\"")
                && message.contains("HOST:PORT")
        }
    }

    @Test func theURLPutsAnIPv6HostInBrackets() {
        #expect(MetricsAddress(host: "::1", port: 9470).url == "http://[::1]:9470/metrics")
        #expect(MetricsAddress.coordinatorDefault.url == "http://127.0.0.1:9470/metrics")
        #expect(MetricsAddress.workerDefault.port == 9471)
    }
}

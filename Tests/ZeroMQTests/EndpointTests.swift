import Testing
import ZeroMQ

/// The one endpoint check every Cohort peer uses.
@Suite struct EndpointTests {
    @Test(arguments: ["tcp://127.0.0.1:7400", "tcp://127.0.0.1:*", "ipc:///run/cohort.sock", "inproc://coordinator"])
    func endpointsAreAccepted(_ endpoint: String) {
        #expect(Endpoint.problem(endpoint) == nil)
    }

    @Test(arguments: ["127.0.0.1:7400", "tcp://", "udp://1.2.3.4:5", "", "localhost"])
    func otherTextIsRefusedWithTheShapeItShouldHave(_ text: String) {
        #expect(Endpoint.problem(text) == "\"\(text)\" is not an endpoint like tcp://HOST:PORT")
    }
}

import Testing

@testable import CohortCoordinator

@Test func defaultEndpointIsLoopbackPort7400() {
    #expect(CoordinatorConfiguration().endpoint == "tcp://127.0.0.1:7400")
}

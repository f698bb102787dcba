import Testing

@testable import ZeroMQ

@Test func linkedLibzmqIsVersion4WithCurve() {
    #expect(ZeroMQ.version.major == 4)
    #expect(ZeroMQ.has("curve"))
}

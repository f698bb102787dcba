import Testing
@testable import CohortWire

@Test func protocolVersionStartsAtOne() {
    #expect(WireVersion.current == 1)
}

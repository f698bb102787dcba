import Testing

@testable import CohortWire

/// Version 2 added the cancel codes (`CancelCode`) next to the cancel reasons' texts.
@Test func protocolVersionIsTwo() {
    #expect(WireVersion.current == 2)
    #expect(WireVersion.supported == 2...2)
}

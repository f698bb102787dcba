import Testing

@testable import CohortWire

/// Version 2 added the cancel codes (`CancelCode`) next to the cancel reasons' texts.
@Test func protocolVersionIsThree() {
    #expect(WireVersion.current == 3)
    #expect(WireVersion.supported == 3...3)
}

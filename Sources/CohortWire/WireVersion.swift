/// The wire protocol's identity, apart from Cohort's release version.
///
/// A peer and the coordinator must speak the same protocol version: the
/// header of every message carries it, and a decoder refuses any other
/// (``WireError/unsupportedVersion(got:family:)``). The release version
/// (`Hello.softwareVersion`) is informative only.
public enum WireVersion {
    /// The protocol version this build speaks.
    public static let current: UInt16 = 3

    /// Every protocol version this build can decode (today: only `current`).
    public static let supported: ClosedRange<UInt16> = current...current
}

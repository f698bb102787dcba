/// The wire protocol's identity, apart from Cohort's release version.
public enum WireVersion {
    /// The protocol version this build speaks.
    public static let current: UInt16 = 1
}

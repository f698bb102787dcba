/// Why a body is not a valid message of its family and kind. The codec turns
/// it into ``WireError/malformedBody(_:reason:)`` with the body's family, or
/// ``WireError/unknownKind(_:kind:)`` for ``unknownKind``.
struct BodyError: Error {
    var reason: String
    /// The header's kind byte names no kind this version knows in the family.
    var isUnknownKind = false
    /// The body claims another protocol version than its header (a HELLO's
    /// `protocol_version`): refused as ``WireError/unsupportedVersion(got:family:)``.
    var otherVersion: UInt16?

    init(_ reason: String) {
        self.reason = reason
    }

    static var unknownKind: BodyError {
        var error = BodyError("unknown message kind")
        error.isUnknownKind = true
        return error
    }

    static func otherVersion(_ version: UInt16) -> BodyError {
        var error = BodyError("the body says protocol version \(version)")
        error.otherVersion = version
        return error
    }
}

/// Why a body is not a valid message of its family and kind. The codec turns
/// it into ``WireError/malformedBody(_:reason:)`` with the body's family, or
/// ``WireError/unknownKind(_:kind:)`` for ``unknownKind``.
struct BodyError: Error {
    var reason: String
    /// The header's kind byte names no kind this version knows in the family.
    var isUnknownKind = false

    init(_ reason: String) {
        self.reason = reason
    }

    static var unknownKind: BodyError {
        var error = BodyError("unknown message kind")
        error.isUnknownKind = true
        return error
    }
}

/// Why a decoded protobuf body is not a valid message. The codec turns it
/// into ``WireError/malformedBody(_:reason:)`` with the body's family, or
/// ``WireError/unknownKind(_:)`` for ``missingKind``.
struct BodyError: Error {
    var reason: String
    /// The envelope's oneof is unset: a kind this version does not know.
    var isMissingKind = false

    init(_ reason: String) {
        self.reason = reason
    }

    static var missingKind: BodyError {
        var error = BodyError("no message kind")
        error.isMissingKind = true
        return error
    }
}

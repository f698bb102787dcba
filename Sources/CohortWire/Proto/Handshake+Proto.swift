// Handshake family <-> Hello (kind 1), Welcome (kind 2), HandshakeError (kind 3).
// This family is frozen across protocol versions (see cohort.proto).

extension Handshake: WireBody {
    static var family: WireFamily { .handshake }

    enum WireKind: UInt8 {
        case hello = 1
        case welcome, error
    }

    var wireKind: UInt8 {
        switch self {
        case .hello: WireKind.hello.rawValue
        case .welcome: WireKind.welcome.rawValue
        case .error: WireKind.error.rawValue
        }
    }

    func serializedBody() throws(WireError) -> [UInt8] {
        switch self {
        case .hello(let hello): try serialize(hello.proto)
        case .welcome(let welcome): try serialize(welcome.proto)
        case .error(let error): try serialize(error.proto)
        }
    }

    static func decode(kind: UInt8, body: UnsafeRawBufferPointer) throws(BodyError) -> Handshake {
        switch WireKind(rawValue: kind) {
        case .hello:
            let hello = try Hello(proto: body.decode(Cohort_Wire_V1_Hello.self))
            guard hello.protocolVersion == WireVersion.current else {
                // The peer speaks the body's version: refuse it as a version mismatch, not as garbage.
                throw BodyError.otherVersion(hello.protocolVersion)
            }
            return .hello(hello)
        case .welcome: return .welcome(try Welcome(proto: body.decode(Cohort_Wire_V1_Welcome.self)))
        case .error: return .error(try HandshakeError(proto: body.decode(Cohort_Wire_V1_HandshakeError.self)))
        case nil: throw .unknownKind
        }
    }
}

extension PeerRole {
    init(proto: Cohort_Wire_V1_PeerRole) throws(BodyError) {
        switch proto {
        case .worker: self = .worker
        case .client: self = .client
        case .unspecified, .UNRECOGNIZED: throw BodyError("peer role \(proto.rawValue) is unknown")
        }
    }

    var proto: Cohort_Wire_V1_PeerRole {
        switch self {
        case .worker: .worker
        case .client: .client
        }
    }
}

/// A protocol version from a uint32 field.
private func version(_ value: UInt32, _ field: String) throws(BodyError) -> UInt16 {
    guard let version = UInt16(exactly: value) else { throw BodyError("\(field) \(value) is out of range") }
    return version
}

extension Hello {
    init(proto: Cohort_Wire_V1_Hello) throws(BodyError) {
        self.init(
            role: try PeerRole(proto: proto.role),
            protocolVersion: try version(proto.protocolVersion, "protocol version"),
            softwareVersion: proto.softwareVersion,
            peerName: proto.peerName
        )
    }

    var proto: Cohort_Wire_V1_Hello {
        var proto = Cohort_Wire_V1_Hello()
        proto.role = role.proto
        proto.protocolVersion = UInt32(protocolVersion)
        proto.softwareVersion = softwareVersion
        proto.peerName = peerName
        return proto
    }
}

extension Welcome {
    init(proto: Cohort_Wire_V1_Welcome) throws(BodyError) {
        self.init(
            coordinatorID: proto.coordinatorID,
            epoch: proto.epoch,
            peerID: proto.peerID,
            heartbeatInterval: .milliseconds(proto.heartbeatIntervalMs),
            heartbeatLiveness: proto.heartbeatLiveness,
            protocolVersion: try version(proto.protocolVersion, "protocol version"),
            softwareVersion: proto.softwareVersion,
            acknowledgesHeartbeats: proto.acknowledgesHeartbeats
        )
    }

    var proto: Cohort_Wire_V1_Welcome {
        var proto = Cohort_Wire_V1_Welcome()
        proto.coordinatorID = coordinatorID
        proto.epoch = epoch
        proto.peerID = peerID
        proto.heartbeatIntervalMs = heartbeatInterval.milliseconds(clampedTo: UInt32.self)
        proto.heartbeatLiveness = heartbeatLiveness
        proto.protocolVersion = UInt32(protocolVersion)
        proto.softwareVersion = softwareVersion
        proto.acknowledgesHeartbeats = acknowledgesHeartbeats
        return proto
    }
}

extension HandshakeError {
    /// `lenient`: the body comes from another protocol version, whose error
    /// codes may be newer than this build's; an unknown code reads as `internal`.
    init(proto: Cohort_Wire_V1_HandshakeError, lenient: Bool = false) throws(BodyError) {
        let code: ProtocolError.Code
        do {
            code = try ProtocolError.Code(proto: proto.code)
        } catch  where lenient {
            code = .internal
        }
        let low = try version(proto.minVersion, "min version")
        let high = try version(proto.maxVersion, "max version")
        guard low <= high else { throw BodyError("supported versions \(low)...\(high) are empty") }
        self.init(
            code: code, message: proto.message, supportedVersions: low...high,
            leader: proto.leader.isEmpty ? nil : proto.leader)
    }

    var proto: Cohort_Wire_V1_HandshakeError {
        var proto = Cohort_Wire_V1_HandshakeError()
        proto.code = code.proto
        proto.message = message
        proto.minVersion = UInt32(supportedVersions.lowerBound)
        proto.maxVersion = UInt32(supportedVersions.upperBound)
        proto.leader = leader ?? ""
        return proto
    }
}

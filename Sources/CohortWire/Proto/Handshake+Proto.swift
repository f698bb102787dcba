// Handshake family <-> Cohort_Wire_V1_Handshake.

extension Handshake {
    init(proto: Cohort_Wire_V1_Handshake) throws(BodyError) {
        switch proto.kind {
        case .hello(let hello): self = .hello(try Hello(proto: hello))
        case .welcome(let welcome): self = .welcome(try Welcome(proto: welcome))
        case .error(let error): self = .error(try HandshakeError(proto: error))
        case nil: throw .missingKind
        }
    }

    var proto: Cohort_Wire_V1_Handshake {
        var proto = Cohort_Wire_V1_Handshake()
        switch self {
        case .hello(let hello): proto.kind = .hello(hello.proto)
        case .welcome(let welcome): proto.kind = .welcome(welcome.proto)
        case .error(let error): proto.kind = .error(error.proto)
        }
        return proto
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
            softwareVersion: proto.softwareVersion
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
        } catch where lenient {
            code = .internal
        }
        let low = try version(proto.minVersion, "min version")
        let high = try version(proto.maxVersion, "max version")
        guard low <= high else { throw BodyError("supported versions \(low)...\(high) are empty") }
        self.init(code: code, message: proto.message, supportedVersions: low...high)
    }

    var proto: Cohort_Wire_V1_HandshakeError {
        var proto = Cohort_Wire_V1_HandshakeError()
        proto.code = code.proto
        proto.message = message
        proto.minVersion = UInt32(supportedVersions.lowerBound)
        proto.maxVersion = UInt32(supportedVersions.upperBound)
        return proto
    }
}

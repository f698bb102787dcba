#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Turns ``WireMessage``s into ZeroMQ frames and back.
///
/// A message is two frames after the routing id (which the ROUTER socket
/// adds and strips; the codec never sees it): frame 0 the 8-byte
/// ``WireHeader`` (magic, version, family, kind), frame 1 the protobuf body
/// of that kind (empty for heartbeats). The codec is a value with no state
/// besides its limit: use one from any thread.
///
/// Decoding never traps: any frames give a message or a ``WireError``.
public struct WireCodec: Sendable {
    /// 16 MiB.
    public static let defaultMaxFrameSize = 16 << 20

    /// The largest frame the codec encodes or accepts, in bytes.
    public var maxFrameSize: Int

    public init(maxFrameSize: Int = WireCodec.defaultMaxFrameSize) {
        self.maxFrameSize = maxFrameSize
    }

    // MARK: Encoding

    /// The frames of `message`: `[header, body]`.
    ///
    /// - Throws: ``WireError/frameTooLarge(frame:size:limit:)`` if the body is
    ///   over ``maxFrameSize`` (split a batch and try again), or
    ///   ``WireError/encodingFailed(_:)`` if protobuf refuses it (over 2 GiB).
    public func encode(_ message: WireMessage) throws(WireError) -> [[UInt8]] {
        switch message {
        case .handshake(let handshake): try frames(handshake)
        case .clientRequest(let request): try frames(request)
        case .coordinatorReply(let reply): try frames(reply)
        case .worker(let message): try frames(message)
        case .toWorker(let message): try frames(message)
        }
    }

    /// The frames of a handshake message.
    public func encode(_ handshake: Handshake) throws(WireError) -> [[UInt8]] { try frames(handshake) }
    /// The frames of a client request.
    public func encode(_ request: ClientRequest) throws(WireError) -> [[UInt8]] { try frames(request) }
    /// The frames of a reply to a client.
    public func encode(_ reply: CoordinatorReply) throws(WireError) -> [[UInt8]] { try frames(reply) }
    /// The frames of a worker's message.
    public func encode(_ message: WorkerMessage) throws(WireError) -> [[UInt8]] { try frames(message) }
    /// The frames of a message to a worker.
    public func encode(_ message: CoordinatorToWorker) throws(WireError) -> [[UInt8]] { try frames(message) }

    @inline(__always)
    private func frames<Body: WireBody>(_ message: Body) throws(WireError) -> [[UInt8]] {
        let body = try message.serializedBody()
        guard body.count <= maxFrameSize else {
            throw .frameTooLarge(frame: 1, size: body.count, limit: maxFrameSize)
        }
        return [WireHeader.encoded(Body.family, message.wireKind), body]
    }

    // MARK: Decoding

    /// The message in `frames` (the frames after the routing id).
    ///
    /// Checks, in order: at least one frame; no frame over ``maxFrameSize``;
    /// the header's magic, version (a wrong version throws
    /// ``WireError/unsupportedVersion(got:family:)`` whatever follows),
    /// length, family; exactly two frames; the kind; the body.
    ///
    /// One exception to the version check: a handshake ERROR (family 1,
    /// kind 3) of another protocol version decodes, since that family's
    /// layout is frozen, so a peer learns why the coordinator refused it.
    public func decode(frames: [[UInt8]]) throws(WireError) -> WireMessage {
        try decodeFrames(frames)
    }

    /// The message in `frames`; see ``decode(frames:)-([[UInt8]])``.
    public func decode(frames: [Data]) throws(WireError) -> WireMessage {
        try decodeFrames(frames)
    }

    /// The message in `frames`, read in place (e.g. from `zmq_msg_t`s that
    /// stay alive during the call); see ``decode(frames:)-([[UInt8]])``.
    public func decode(frames: [UnsafeRawBufferPointer]) throws(WireError) -> WireMessage {
        try decodeFrames(frames)
    }

    /// The header in `frame` (frame 0), to route or refuse a message without
    /// decoding its body.
    ///
    /// - Throws: the header errors of ``decode(frames:)-([[UInt8]])``, including
    ///   ``WireError/unsupportedVersion(got:family:)``.
    public func decodeHeader(_ frame: [UInt8]) throws(WireError) -> WireHeader {
        let parsed = frame.withUnsafeBytes { bytes in Result { () throws(WireError) in try WireHeader.parse(bytes) } }
        switch try parsed.get() {
        case .valid(let header): return header
        case .otherVersion(let version, let family, _): throw .unsupportedVersion(got: version, family: family)
        }
    }

    private func decodeFrames<Frame: WireFrame>(_ frames: [Frame]) throws(WireError) -> WireMessage {
        guard let first = frames.first else { throw .wrongFrameCount(got: 0) }
        for index in frames.indices where frames[index].count > maxFrameSize {
            throw .frameTooLarge(frame: index, size: frames[index].count, limit: maxFrameSize)
        }
        let parsed = first.withFrameBytes { bytes in Result { () throws(WireError) in try WireHeader.parse(bytes) } }
        switch try parsed.get() {
        case .otherVersion(let version, let family, let kind):
            if family == .handshake, kind == Handshake.WireKind.error.rawValue, frames.count == 2,
                let refusal = frames[1].withFrameBytes(Self.foreignRefusal)
            {
                return .handshake(.error(refusal))
            }
            throw .unsupportedVersion(got: version, family: family)
        case .valid(let header):
            guard frames.count == 2 else { throw .wrongFrameCount(got: frames.count) }
            let decoded = frames[1].withFrameBytes { body in
                Result { () throws(BodyError) in try Self.decodeBody(header, body) }
            }
            switch decoded {
            case .success(let message):
                return message
            case .failure(let error):
                if let version = error.otherVersion { throw .unsupportedVersion(got: version, family: header.family) }
                throw error.isUnknownKind
                    ? .unknownKind(header.family, kind: header.kind)
                    : .malformedBody(header.family, reason: error.reason)
            }
        }
    }

    @inline(__always)
    private static func decodeBody(_ header: WireHeader, _ body: UnsafeRawBufferPointer) throws(BodyError)
        -> WireMessage
    {
        switch header.family {
        case .handshake: .handshake(try Handshake.decode(kind: header.kind, body: body))
        case .clientRequest: .clientRequest(try ClientRequest.decode(kind: header.kind, body: body))
        case .coordinatorReply: .coordinatorReply(try CoordinatorReply.decode(kind: header.kind, body: body))
        case .workerMessage: .worker(try WorkerMessage.decode(kind: header.kind, body: body))
        case .coordinatorToWorker: .toWorker(try CoordinatorToWorker.decode(kind: header.kind, body: body))
        }
    }

    /// A handshake ERROR body of another protocol version, or nil.
    private static func foreignRefusal(_ body: UnsafeRawBufferPointer) -> HandshakeError? {
        guard let proto = try? body.decode(Cohort_Wire_V1_HandshakeError.self) else { return nil }
        return try? HandshakeError(proto: proto, lenient: true)
    }
}

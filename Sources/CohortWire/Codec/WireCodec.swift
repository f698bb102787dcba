#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftProtobuf

/// Turns ``WireMessage``s into ZeroMQ frames and back.
///
/// A message is two frames after the routing id (which the ROUTER socket
/// adds and strips; the codec never sees it): frame 0 the 8-byte
/// ``WireHeader``, frame 1 the protobuf body of the header's family. The
/// codec is a value with no state besides its limit: use one from any
/// thread.
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
        case .handshake(let handshake): try encode(handshake)
        case .clientRequest(let request): try encode(request)
        case .coordinatorReply(let reply): try encode(reply)
        case .worker(let message): try encode(message)
        case .toWorker(let message): try encode(message)
        }
    }

    /// The frames of a handshake message.
    public func encode(_ handshake: Handshake) throws(WireError) -> [[UInt8]] {
        try frames(.handshake, handshake.proto)
    }

    /// The frames of a client request.
    public func encode(_ request: ClientRequest) throws(WireError) -> [[UInt8]] {
        try frames(.clientRequest, request.proto)
    }

    /// The frames of a reply to a client.
    public func encode(_ reply: CoordinatorReply) throws(WireError) -> [[UInt8]] {
        try frames(.coordinatorReply, reply.proto)
    }

    /// The frames of a worker's message.
    public func encode(_ message: WorkerMessage) throws(WireError) -> [[UInt8]] {
        try frames(.workerMessage, message.proto)
    }

    /// The frames of a message to a worker.
    public func encode(_ message: CoordinatorToWorker) throws(WireError) -> [[UInt8]] {
        try frames(.coordinatorToWorker, message.proto)
    }

    @inline(__always)
    private func frames(_ family: WireFamily, _ body: some SwiftProtobuf.Message) throws(WireError) -> [[UInt8]] {
        let bytes: [UInt8]
        do {
            bytes = try body.serializedBytes()
        } catch {
            throw .encodingFailed(String(describing: error))
        }
        guard bytes.count <= maxFrameSize else {
            throw .frameTooLarge(frame: 1, size: bytes.count, limit: maxFrameSize)
        }
        return [WireHeader.current[Int(family.rawValue)], bytes]
    }

    // MARK: Decoding

    /// The message in `frames` (the frames after the routing id).
    ///
    /// Checks, in order: at least one frame; no frame over ``maxFrameSize``;
    /// the header's magic, version (a wrong version throws
    /// ``WireError/unsupportedVersion(got:family:)``, whatever follows),
    /// length and family; exactly two frames; the body.
    ///
    /// One exception to the version check: a handshake ERROR of another
    /// protocol version decodes (that family's layout is frozen), so a
    /// peer learns why the coordinator refused it.
    public func decode(frames: [[UInt8]]) throws(WireError) -> WireMessage {
        try decodeFrames(frames)
    }

    /// The message in `frames`; see ``decode(frames:)-([[UInt8]])``.
    public func decode(frames: [Data]) throws(WireError) -> WireMessage {
        try decodeFrames(frames)
    }

    /// The message in `frames`, read in place (e.g. from `zmq_msg_t`s that
    /// stay alive for the call); see ``decode(frames:)-([[UInt8]])``.
    public func decode(frames: [UnsafeRawBufferPointer]) throws(WireError) -> WireMessage {
        try decodeFrames(frames)
    }

    /// The header of `frame` (frame 0), to route or refuse a message without
    /// decoding its body.
    ///
    /// - Throws: the header errors of ``decode(frames:)-([[UInt8]])``, including
    ///   ``WireError/unsupportedVersion(got:family:)``.
    public func decodeHeader(_ frame: [UInt8]) throws(WireError) -> WireHeader {
        let parsed = frame.withUnsafeBytes { bytes in Result { () throws(WireError) in try WireHeader.parse(bytes) } }
        switch try parsed.get() {
        case .valid(let header): return header
        case .otherVersion(let version, let family): throw .unsupportedVersion(got: version, family: family)
        }
    }

    private func decodeFrames<Frame: WireFrame>(_ frames: [Frame]) throws(WireError) -> WireMessage {
        guard let header = frames.first else { throw .wrongFrameCount(got: 0) }
        for (index, frame) in frames.enumerated() where frame.count > maxFrameSize {
            throw .frameTooLarge(frame: index, size: frame.count, limit: maxFrameSize)
        }
        let parsed = header.withFrameBytes { bytes in Result { () throws(WireError) in try WireHeader.parse(bytes) } }
        switch try parsed.get() {
        case .otherVersion(let version, let family):
            if family == .handshake, frames.count == 2,
               let refusal = frames[1].withFrameBytes(Self.foreignHandshakeError) {
                return .handshake(.error(refusal))
            }
            throw .unsupportedVersion(got: version, family: family)
        case .valid(let header):
            guard frames.count == 2 else { throw .wrongFrameCount(got: frames.count) }
            let body = frames[1].withFrameBytes { bytes in
                Result { () throws(WireError) in try Self.decodeBody(header.family, bytes) }
            }
            return try body.get()
        }
    }

    private static let options: BinaryDecodingOptions = {
        var options = BinaryDecodingOptions()
        options.discardUnknownFields = true
        options.messageDepthLimit = 20
        return options
    }()

    private static func decodeBody(_ family: WireFamily, _ bytes: UnsafeRawBufferPointer) throws(WireError) -> WireMessage {
        do {
            switch family {
            case .handshake:
                let proto = try parse(Cohort_Wire_V1_Handshake.self, family, bytes)
                let handshake = try Handshake(proto: proto)
                if case .hello(let hello) = handshake, hello.protocolVersion != WireVersion.current {
                    throw BodyError("hello says protocol version \(hello.protocolVersion) in a version \(WireVersion.current) header")
                }
                return .handshake(handshake)
            case .clientRequest:
                return .clientRequest(try ClientRequest(proto: parse(Cohort_Wire_V1_ClientRequest.self, family, bytes)))
            case .coordinatorReply:
                return .coordinatorReply(try CoordinatorReply(proto: parse(Cohort_Wire_V1_CoordinatorReply.self, family, bytes)))
            case .workerMessage:
                return .worker(try WorkerMessage(proto: parse(Cohort_Wire_V1_WorkerMessage.self, family, bytes)))
            case .coordinatorToWorker:
                return .toWorker(try CoordinatorToWorker(proto: parse(Cohort_Wire_V1_CoordinatorToWorker.self, family, bytes)))
            }
        } catch let error as BodyError {
            throw error.isMissingKind ? .unknownKind(family) : .malformedBody(family, reason: error.reason)
        } catch let error as WireError {
            throw error
        } catch {
            throw .malformedBody(family, reason: String(describing: error))
        }
    }

    @inline(__always)
    private static func parse<M: SwiftProtobuf.Message>(
        _: M.Type, _ family: WireFamily, _ bytes: UnsafeRawBufferPointer
    ) throws(WireError) -> M {
        do {
            return try M(serializedBytes: RawSpan(_unsafeBytes: bytes), options: options)
        } catch {
            throw .malformedBody(family, reason: String(describing: error))
        }
    }

    /// A handshake ERROR in a body of another protocol version, or nil.
    private static func foreignHandshakeError(_ bytes: UnsafeRawBufferPointer) -> HandshakeError? {
        guard let proto = try? Cohort_Wire_V1_Handshake(serializedBytes: RawSpan(_unsafeBytes: bytes), options: options),
              case .error(let error) = proto.kind
        else { return nil }
        return try? HandshakeError(proto: error, lenient: true)
    }
}

/// A frame's bytes, whatever holds them.
protocol WireFrame {
    var count: Int { get }
    func withFrameBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R
}

extension Array: WireFrame where Element == UInt8 {
    @inline(__always)
    func withFrameBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { withUnsafeBytes(body) }
}

extension Data: WireFrame {
    @inline(__always)
    func withFrameBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { withUnsafeBytes(body) }
}

extension UnsafeRawBufferPointer: WireFrame {
    @inline(__always)
    func withFrameBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { body(self) }
}

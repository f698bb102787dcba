import SwiftProtobuf

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A message family's conversion to and from frame 1: a kind byte (frame 0's
/// last byte) and a protobuf body. Each family implements it in one file,
/// `<Family>+Proto.swift`.
protocol WireBody {
    static var family: WireFamily { get }
    /// The header's kind byte.
    var wireKind: UInt8 { get }
    /// Frame 1.
    func serializedBody() throws(WireError) -> [UInt8]
    /// The message of `kind` in `body`.
    static func decode(kind: UInt8, body: UnsafeRawBufferPointer) throws(BodyError) -> Self
}

/// The protobuf encoding of `message`.
@inline(__always)
func serialize(_ message: some SwiftProtobuf.Message) throws(WireError) -> [UInt8] {
    do {
        return try message.serializedBytes()
    } catch {
        throw .encodingFailed(String(describing: error))
    }
}

let decodingOptions: BinaryDecodingOptions = {
    var options = BinaryDecodingOptions()
    // Fields a later version adds are skipped, not kept: nothing here re-encodes them.
    options.discardUnknownFields = true
    // The deepest message of version 1 nests 3 levels; anything deeper is garbage.
    options.messageDepthLimit = 16
    return options
}()

extension UnsafeRawBufferPointer {
    /// These bytes decoded as a protobuf message `M`.
    @inline(__always)
    func decode<M: SwiftProtobuf.Message>(_: M.Type) throws(BodyError) -> M {
        do {
            return try M(serializedBytes: RawSpan(_unsafeBytes: self), options: decodingOptions)
        } catch {
            throw BodyError(String(describing: error))
        }
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

import CZeroMQ

/// A typed socket option: its libzmq number and how its value is encoded.
///
/// Use the named options (`.linger`, `.routerMandatory`, `.curveServer`…) with
/// ``Socket/set(_:to:)`` and ``Socket/get(_:)``, or build one for any
/// integer option with ``int32(_:)``.
///
/// Thread-safety: a plain `Sendable` value.
public struct SocketOption<Value>: Sendable {
    /// libzmq's option number, e.g. 17 for `ZMQ_LINGER`.
    public let code: Int32
    /// The option's name, for error messages.
    public let name: String
    let encode: @Sendable (Value) -> [UInt8]
    let decode: @Sendable ([UInt8]) -> Value
    /// Bytes to reserve when reading the option.
    let capacity: Int

    init(
        code: Int32,
        name: String,
        capacity: Int,
        encode: @escaping @Sendable (Value) -> [UInt8],
        decode: @escaping @Sendable ([UInt8]) -> Value
    ) {
        self.code = code
        self.name = name
        self.capacity = capacity
        self.encode = encode
        self.decode = decode
    }
}

// MARK: Encodings

extension SocketOption where Value == Int32 {
    /// Any `int` option by number (libzmq's `zmq_setsockopt` with an `int`).
    public static func int32(_ code: Int32, name: String? = nil) -> Self {
        Self(
            code: code, name: name ?? "option \(code)", capacity: 4,
            encode: { withUnsafeBytes(of: $0) { Array($0) } },
            decode: { bytes in bytes.withUnsafeBytes { $0.loadUnaligned(as: Int32.self) } })
    }
}

extension SocketOption where Value == Int64 {
    /// Any `int64_t` option by number, e.g. `ZMQ_MAXMSGSIZE`.
    public static func int64(_ code: Int32, name: String? = nil) -> Self {
        Self(
            code: code, name: name ?? "option \(code)", capacity: 8,
            encode: { withUnsafeBytes(of: $0) { Array($0) } },
            decode: { bytes in bytes.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) } })
    }
}

extension SocketOption where Value == Bool {
    /// Any `int` option used as a flag (0 or 1).
    public static func flag(_ code: Int32, name: String? = nil) -> Self {
        let int = SocketOption<Int32>.int32(code, name: name)
        return Self(
            code: code, name: int.name, capacity: 4,
            encode: { int.encode($0 ? 1 : 0) },
            decode: { int.decode($0) != 0 })
    }
}

extension SocketOption where Value == Duration {
    /// Any `int` option in milliseconds. A negative duration means "no limit" (-1).
    public static func milliseconds(_ code: Int32, name: String? = nil) -> Self {
        let int = SocketOption<Int32>.int32(code, name: name)
        return Self(
            code: code, name: int.name, capacity: 4,
            encode: { int.encode($0.zmqMilliseconds) },
            decode: { Duration(zmqMilliseconds: int.decode($0)) })
    }
}

extension SocketOption where Value == [UInt8] {
    /// Any binary option by number, e.g. `ZMQ_ROUTING_ID`.
    public static func bytes(_ code: Int32, name: String? = nil) -> Self {
        Self(code: code, name: name ?? "option \(code)", capacity: 256, encode: { $0 }, decode: { $0 })
    }
}

extension SocketOption where Value == String {
    /// Any string option by number; read values lose their trailing NUL.
    public static func string(_ code: Int32, name: String? = nil) -> Self {
        Self(
            code: code, name: name ?? "option \(code)", capacity: 1024,
            encode: { Array($0.utf8) },
            decode: { bytes in
                let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
                return String(decoding: bytes[..<end], as: UTF8.self)
            })
    }
}

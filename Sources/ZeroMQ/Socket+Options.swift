import CZeroMQ

extension Socket {
    /// Sets a socket option, e.g. `try socket.set(.routerMandatory, to: true)`.
    ///
    /// Most options apply only to connections made after they are set, so set
    /// them before ``bind(_:)``/``connect(_:)``. Thread-safety: the owning
    /// thread. Throws ``ZeroMQError`` (``ZeroMQError/Code/invalidArgument`` for
    /// an option this socket type does not have or a bad value).
    public func set<Value>(_ option: SocketOption<Value>, to value: Value) throws(ZeroMQError) {
        let handle = try liveHandle()
        let bytes = option.encode(value)
        do {
            try zmqCheck("zmq_setsockopt") {
                bytes.withUnsafeBytes { zmq_setsockopt(handle, option.code, $0.baseAddress, $0.count) }
            }
        } catch {
            throw error.naming("zmq_setsockopt(\(option.name))")
        }
    }

    /// Reads a socket option, e.g. `try socket.get(.linger)`.
    ///
    /// Thread-safety: the owning thread. Throws ``ZeroMQError``
    /// (``ZeroMQError/Code/invalidArgument`` for write-only options such as `.subscribe`).
    public func get<Value>(_ option: SocketOption<Value>) throws(ZeroMQError) -> Value {
        let handle = try liveHandle()
        var bytes = [UInt8](repeating: 0, count: option.capacity)
        var size = bytes.count
        do {
            try zmqCheck("zmq_getsockopt") {
                bytes.withUnsafeMutableBytes { zmq_getsockopt(handle, option.code, $0.baseAddress, &size) }
            }
        } catch {
            throw error.naming("zmq_getsockopt(\(option.name))")
        }
        bytes.removeSubrange(min(size, bytes.count)...)
        return option.decode(bytes)
    }

    /// Subscribes a SUB socket to messages whose first frame starts with `prefix` (all, by default).
    ///
    /// Thread-safety: the owning thread. Throws ``ZeroMQError``.
    public func subscribe(to prefix: [UInt8] = []) throws(ZeroMQError) {
        try set(.subscribe, to: prefix)
    }

    /// Makes this socket a CURVE server that admits clients only through a ZAP handler.
    ///
    /// Sets `CURVE_SERVER`, the secret key, `ZAP_DOMAIN` and
    /// `ZAP_ENFORCE_DOMAIN`, so that without a running ``ZAPHandler`` every
    /// client is refused (fail closed; docs/architecture.md, "ZeroMQ facts the code relies on"). Call before ``bind(_:)``.
    /// Thread-safety: the owning thread. Throws ``ZeroMQError``.
    public func makeCurveServer(secretKey: CurveSecretKey, zapDomain: String = "cohort") throws(ZeroMQError) {
        try set(.zapDomain, to: zapDomain)
        try set(.zapEnforceDomain, to: true)
        try set(.curveServer, to: true)
        try set(.curveSecretKey, to: secretKey)
    }

    /// Makes this socket a CURVE client of the server whose public key is `serverKey`.
    ///
    /// Call before ``connect(_:)``. Thread-safety: the owning thread. Throws ``ZeroMQError``.
    public func makeCurveClient(_ keys: CurveClientKeys) throws(ZeroMQError) {
        try makeCurveClient(keyPair: keys.keyPair, serverKey: keys.serverKey)
    }

    /// Makes this socket a CURVE client of the server whose public key is `serverKey`.
    ///
    /// Call before ``connect(_:)``. Throws ``ZeroMQError``.
    public func makeCurveClient(keyPair: CurveKeyPair, serverKey: CurvePublicKey) throws(ZeroMQError) {
        try set(.curveServerKey, to: serverKey)
        try set(.curvePublicKey, to: keyPair.publicKey)
        try set(.curveSecretKey, to: keyPair.secretKey)
    }
}

// MARK: The options a cluster needs

extension SocketOption where Value == Duration {
    /// How long ``Socket/close()`` keeps unsent messages (`ZMQ_LINGER`); negative: forever.
    public static var linger: Self { .milliseconds(ZMQ_LINGER, name: "ZMQ_LINGER") }
    /// First delay before reconnecting a dropped connection (`ZMQ_RECONNECT_IVL`).
    public static var reconnectInterval: Self { .milliseconds(ZMQ_RECONNECT_IVL, name: "ZMQ_RECONNECT_IVL") }
    /// Upper bound of the doubling reconnect delay (`ZMQ_RECONNECT_IVL_MAX`); zero: no backoff.
    public static var reconnectIntervalMax: Self { .milliseconds(ZMQ_RECONNECT_IVL_MAX, name: "ZMQ_RECONNECT_IVL_MAX") }
    /// Interval between ZMTP PINGs (`ZMQ_HEARTBEAT_IVL`); zero: off.
    public static var heartbeatInterval: Self { .milliseconds(ZMQ_HEARTBEAT_IVL, name: "ZMQ_HEARTBEAT_IVL") }
    /// How long the peer should wait for traffic before dropping us (`ZMQ_HEARTBEAT_TTL`, 100 ms steps).
    public static var heartbeatTTL: Self { .milliseconds(ZMQ_HEARTBEAT_TTL, name: "ZMQ_HEARTBEAT_TTL") }
    /// How long to wait for traffic after a PING before dropping the connection (`ZMQ_HEARTBEAT_TIMEOUT`).
    public static var heartbeatTimeout: Self { .milliseconds(ZMQ_HEARTBEAT_TIMEOUT, name: "ZMQ_HEARTBEAT_TIMEOUT") }
    /// Longest a blocking send waits (`ZMQ_SNDTIMEO`); negative: forever.
    public static var sendTimeout: Self { .milliseconds(ZMQ_SNDTIMEO, name: "ZMQ_SNDTIMEO") }
    /// Longest a blocking receive waits (`ZMQ_RCVTIMEO`); negative: forever.
    public static var receiveTimeout: Self { .milliseconds(ZMQ_RCVTIMEO, name: "ZMQ_RCVTIMEO") }
}

extension SocketOption where Value == Int32 {
    /// Outgoing messages queued per peer before sends block or drop (`ZMQ_SNDHWM`); 0: no limit.
    public static var sendHighWaterMark: Self { .int32(ZMQ_SNDHWM, name: "ZMQ_SNDHWM") }
    /// Incoming messages queued per peer (`ZMQ_RCVHWM`); 0: no limit.
    public static var receiveHighWaterMark: Self { .int32(ZMQ_RCVHWM, name: "ZMQ_RCVHWM") }
    /// Read-only: what the socket can do right now without blocking (`ZMQ_EVENTS`), a
    /// combination of `ZMQ_POLLIN` (1: a message can be received) and `ZMQ_POLLOUT` (2).
    public static var events: Self { .int32(ZMQ_EVENTS, name: "ZMQ_EVENTS") }
}

extension SocketOption where Value == Int64 {
    /// Largest message a peer may send before it is disconnected (`ZMQ_MAXMSGSIZE`); -1: no limit.
    public static var maxMessageSize: Self { .int64(ZMQ_MAXMSGSIZE, name: "ZMQ_MAXMSGSIZE") }
}

extension SocketOption where Value == Bool {
    /// On a ROUTER, throw `EHOSTUNREACH` for unknown peers and block (or
    /// "would block") for full ones, instead of dropping silently (`ZMQ_ROUTER_MANDATORY`).
    public static var routerMandatory: Self { .flag(ZMQ_ROUTER_MANDATORY, name: "ZMQ_ROUTER_MANDATORY") }
    /// Queue messages only to completed connections (`ZMQ_IMMEDIATE`).
    public static var immediate: Self { .flag(ZMQ_IMMEDIATE, name: "ZMQ_IMMEDIATE") }
    /// Act as a CURVE server (`ZMQ_CURVE_SERVER`); needs ``curveSecretKey``.
    public static var curveServer: Self { .flag(ZMQ_CURVE_SERVER, name: "ZMQ_CURVE_SERVER") }
    /// Refuse clients when no ZAP handler answers (`ZMQ_ZAP_ENFORCE_DOMAIN`, 93).
    public static var zapEnforceDomain: Self { .flag(ZMQ_ZAP_ENFORCE_DOMAIN, name: "ZMQ_ZAP_ENFORCE_DOMAIN") }
}

extension SocketOption where Value == [UInt8] {
    /// The id a ROUTER peer knows this socket by (`ZMQ_ROUTING_ID`), 1–255 bytes, not starting with 0.
    public static var routingID: Self { .bytes(ZMQ_ROUTING_ID, name: "ZMQ_ROUTING_ID") }
    /// Add a SUB filter prefix (`ZMQ_SUBSCRIBE`); write-only.
    public static var subscribe: Self { .bytes(ZMQ_SUBSCRIBE, name: "ZMQ_SUBSCRIBE") }
    /// Remove a SUB filter prefix (`ZMQ_UNSUBSCRIBE`); write-only.
    public static var unsubscribe: Self { .bytes(ZMQ_UNSUBSCRIBE, name: "ZMQ_UNSUBSCRIBE") }
}

extension SocketOption where Value == String {
    /// The ZAP domain the server's connections are authenticated in (`ZMQ_ZAP_DOMAIN`).
    public static var zapDomain: Self { .string(ZMQ_ZAP_DOMAIN, name: "ZMQ_ZAP_DOMAIN") }
    /// The last endpoint bound or connected, wildcard resolved (`ZMQ_LAST_ENDPOINT`); read-only.
    public static var lastEndpoint: Self { .string(ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT") }
}

extension SocketOption where Value == CurvePublicKey {
    /// This socket's long-term CURVE public key (`ZMQ_CURVE_PUBLICKEY`).
    public static var curvePublicKey: Self { curveKey(ZMQ_CURVE_PUBLICKEY, "ZMQ_CURVE_PUBLICKEY") }
    /// The server's public key, on a client (`ZMQ_CURVE_SERVERKEY`).
    public static var curveServerKey: Self { curveKey(ZMQ_CURVE_SERVERKEY, "ZMQ_CURVE_SERVERKEY") }

    private static func curveKey(_ code: Int32, _ name: String) -> Self {
        Self(
            code: code, name: name, capacity: CurvePublicKey.byteCount,
            encode: { $0.bytes }, decode: { CurvePublicKey(uncheckedBytes: $0) })
    }
}

extension SocketOption where Value == CurveSecretKey {
    /// This socket's long-term CURVE secret key (`ZMQ_CURVE_SECRETKEY`).
    public static var curveSecretKey: Self {
        Self(
            code: ZMQ_CURVE_SECRETKEY, name: "ZMQ_CURVE_SECRETKEY", capacity: CurveSecretKey.byteCount,
            encode: { $0.bytes }, decode: { CurveSecretKey(uncheckedBytes: $0) })
    }
}

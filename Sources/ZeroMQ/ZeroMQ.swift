import CZeroMQ

/// Facts about the libzmq this process is linked against.
public enum ZeroMQ {
    /// The linked libzmq's version, e.g. `(4, 3, 4)`.
    public static var version: (major: Int, minor: Int, patch: Int) {
        var major: Int32 = 0
        var minor: Int32 = 0
        var patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return (Int(major), Int(minor), Int(patch))
    }

    /// Whether libzmq was built with a capability, e.g. `"curve"`.
    public static func has(_ capability: String) -> Bool {
        zmq_has(capability) != 0
    }
}

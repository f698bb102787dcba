import Foundation

/// A TCP peer that speaks just enough ZMTP 3.0 to deliver frames of its choosing to the
/// coordinator, or that sends raw garbage: the coordinator must shrug both off.
final class RawPeer {
    private let fd: Int32

    /// Connects to `endpoint` (`tcp://127.0.0.1:PORT`).
    init(endpoint: String) throws {
        guard let port = endpoint.split(separator: ":").last.flatMap({ UInt16($0) }) else {
            throw TestFailure("no port in \(endpoint)")
        }
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw TestFailure("connect: \(String(cString: strerror(errno)))")
        }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            offset += written
        }
    }

    /// Reads up to `count` bytes (fewer on timeout or close).
    func receive(_ count: Int) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: count)
        while result.count < count {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, count - result.count) }
            if got <= 0 { break }
            result += buffer[0..<got]
        }
        return result
    }

    /// The ZMTP 3.0 greeting (NULL mechanism, as client) and a READY command as a DEALER;
    /// reads the coordinator's greeting and READY.
    func handshakeAsDealer() throws {
        var greeting: [UInt8] = [0xFF] + [UInt8](repeating: 0, count: 8) + [0x7F, 3, 0]
        greeting += Array("NULL".utf8) + [UInt8](repeating: 0, count: 16)
        greeting += [0] + [UInt8](repeating: 0, count: 31)
        send(greeting)
        let theirs = receive(64)
        guard theirs.count == 64, theirs[0] == 0xFF else { throw TestFailure("no ZMTP greeting from the coordinator") }
        var ready: [UInt8] = [5] + Array("READY".utf8)
        ready += [11] + Array("Socket-Type".utf8) + [0, 0, 0, 6] + Array("DEALER".utf8)
        send([0x04, UInt8(ready.count)] + ready)
        let header = receive(2)
        guard header.count == 2, header[0] & 0x04 != 0 else { throw TestFailure("no READY from the coordinator") }
        _ = receive(Int(header[1]))
    }

    /// Sends one multipart message of short frames.
    func sendMessage(_ frames: [[UInt8]]) {
        for (index, frame) in frames.enumerated() {
            precondition(frame.count < 256)
            send([index < frames.count - 1 ? 0x01 : 0x00, UInt8(frame.count)] + frame)
        }
    }

    /// Reads until what arrived satisfies `done`, or until the receive timeout (2 s) passes
    /// with nothing more, or the connection closes; returns what arrived.
    func receive(until done: ([UInt8]) -> Bool) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !done(result) {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got <= 0 { break }
            result += buffer[0..<got]
        }
        return result
    }
}

import CohortTestSupport
import Foundation

/// Bytes that are not ZMTP at all, written to a plain TCP connection to `endpoint`
/// (`tcp://127.0.0.1:PORT`), which is then closed: what a port scanner or a confused client
/// sends. (Frames of the test's choosing over a real ZMTP connection: ``FakePeer/sendRaw(_:to:)``.)
public func sendRawTCP(_ bytes: [UInt8], to endpoint: String) throws {
    guard let port = endpoint.split(separator: ":").last.flatMap({ UInt16($0) }) else {
        throw PeerError("no port in \(endpoint)")
    }
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw PeerError("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard rc == 0 else { throw PeerError("connect: \(String(cString: strerror(errno)))") }
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}

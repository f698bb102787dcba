import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a plain HTTP/1.0 GET returned.
public struct HTTPReply: Sendable {
    /// The status code (200, 404…).
    public var status: Int
    /// The body, as UTF-8 text.
    public var body: String
}

/// A tiny blocking HTTP GET over a TCP socket to `host` (an IPv4 address) and `port`, for
/// tests of the metrics endpoint; throws when it cannot connect (nothing listens) or the
/// answer is not HTTP. Waits at most `timeout` for the whole answer. It blocks its thread: for
/// a server in this process, call it through ``onItsOwnThread(_:)``, since the server needs
/// the cooperative pool's threads to answer.
public func httpGet(host: String = "127.0.0.1", port: Int, path: String, timeout: Duration = .seconds(5)) throws
    -> HTTPReply
{
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HTTPGetError("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var seconds = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw HTTPGetError("bad IPv4 address \(host)") }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw HTTPGetError("cannot connect to \(host):\(port): errno \(errno)") }
    let request = Array("GET \(path) HTTP/1.0\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
        throw HTTPGetError("cannot send the request")
    }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 { throw HTTPGetError("reading the answer failed: errno \(errno)") }
        if count == 0 { break }
        response += buffer[0..<count]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard let headerEnd = text.range(of: "\r\n\r\n"), text.hasPrefix("HTTP/1."),
        let status = Int(text.split(separator: " ").dropFirst().first ?? "")
    else { throw HTTPGetError("not an HTTP answer: \(text.prefix(200))") }
    return HTTPReply(status: status, body: String(text[headerEnd.upperBound...]))
}

/// ``httpGet(host:port:path:timeout:)`` failed.
public struct HTTPGetError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

import Foundation
import ZeroMQ

/// Where the far ends of the benchmarks run: threads of this process, or
/// child processes (this binary with `--role`).
protocol Harness {
    /// Starts an echo ROUTER and returns its endpoint.
    func startEcho() throws -> String
    /// Starts a relay (front and back ROUTERs) and a worker; returns the relay's front endpoint.
    func startRelay() throws -> String
    /// Stops everything it started.
    func stop()
}

/// The far ends on threads of this process, sharing one context with the client.
final class ThreadHarness: Harness {
    let context: Context
    private var threads: [Thread] = []
    private let finished = DispatchGroup()

    init(context: Context) { self.context = context }

    func startEcho() throws -> String {
        let router = try context.socket(.router)
        let endpoint = try bindLoopback(router)
        start("echo") {
            router.adopt()
            try Roles.echo(router)
        }
        return endpoint
    }

    func startRelay() throws -> String {
        let front = try context.socket(.router)
        let back = try context.socket(.router)
        let frontEndpoint = try bindLoopback(front)
        let backEndpoint = try bindLoopback(back)
        let worker = try context.socket(.dealer)
        try worker.connect(backEndpoint)
        start("relay") {
            front.adopt()
            back.adopt()
            try Roles.relay(front: front, back: back)
        }
        start("worker") {
            worker.adopt()
            try Roles.worker(worker)
        }
        return frontEndpoint
    }

    /// Runs `body` on a new thread; `body` adopts the sockets it was handed.
    private func start(_ name: String, _ body: @escaping @Sendable () throws -> Void) {
        finished.enter()
        let group = finished
        let thread = Thread {
            do { try body() } catch { fatalError("bench-zeromq \(name): \(error)") }
            group.leave()
        }
        thread.name = name
        thread.start()
        threads.append(thread)
    }

    func stop() {
        try? context.shutdown()
        _ = finished.wait(timeout: .now() + 5)
    }
}

/// The far ends as child processes, which exit when their stdin closes.
final class ProcessHarness: Harness {
    private var children: [(process: Process, stdin: Pipe)] = []

    func startEcho() throws -> String {
        try spawn(["--role", "echo"])
    }

    func startRelay() throws -> String {
        let endpoints = try spawn(["--role", "relay"]).split(separator: " ").map(String.init)
        guard endpoints.count == 2 else { throw UsageError("relay printed \(endpoints)") }
        _ = try spawn(["--role", "worker", "--connect", endpoints[1]])
        return endpoints[0]
    }

    /// Starts this binary with `arguments` and returns the first line it prints.
    private func spawn(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        children.append((process, stdin))
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { throw UsageError("child \(arguments) exited before printing its endpoint") }
            line.append(chunk)
        }
        return String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static var executable: URL {
        if FileManager.default.fileExists(atPath: "/proc/self/exe"),
            let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        {
            return URL(fileURLWithPath: path)
        }
        return URL(fileURLWithPath: CommandLine.arguments[0])
    }

    func stop() {
        for child in children {
            try? child.stdin.fileHandleForWriting.close()
        }
        for child in children {
            child.process.waitUntilExit()
        }
    }
}

/// Runs one end of a benchmark as a child process: prints its endpoint(s),
/// serves until stdin closes, then exits.
func runChild(role: String, connect: String?) throws -> Never {
    let context = try Context(defaultLinger: .zero)
    // The parent closes our stdin when it is done (or dies): then shut down.
    Thread.detachNewThread {
        _ = FileHandle.standardInput.readDataToEndOfFile()
        try? context.shutdown()
    }
    switch role {
    case "echo":
        let router = try context.socket(.router)
        announce(try bindLoopback(router))
        try Roles.echo(router)
    case "relay":
        let front = try context.socket(.router)
        let back = try context.socket(.router)
        announce("\(try bindLoopback(front)) \(try bindLoopback(back))")
        try Roles.relay(front: front, back: back)
    case "worker":
        guard let connect else { throw UsageError("--role worker needs --connect") }
        let dealer = try context.socket(.dealer)
        try dealer.connect(connect)
        announce(connect)
        try Roles.worker(dealer)
    default:
        throw UsageError("unknown role \(role)")
    }
    exit(0)
}

/// Tells the parent a line at once (unbuffered, unlike `print` to a pipe).
private func announce(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func bindLoopback(_ socket: Socket) throws -> String {
    try socket.bind("tcp://127.0.0.1:*")
    return try socket.lastEndpoint
}

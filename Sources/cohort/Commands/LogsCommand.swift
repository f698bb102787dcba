import ArgumentParser
import CohortClient
import Foundation

/// `cohort logs GROUP CHILD`: what a child's attempt wrote, or follow it as it is written.
struct LogsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logs",
        abstract: "Print what a child wrote (stdout, stderr, a kind's lines), or follow it live.",
        discussion: """
            CHILD is the child's path in nested groups (tests/unit). Lines come in the order \
            they were written, stdout and stderr interleaved, from the coordinator's log store \
            (docs/operations.md, "Logs"): the latest attempt unless --attempt names another.

            With -f, keeps printing as the child writes (a line written on another host shows \
            within about 200 ms) until the attempt ends, then exits with the child's outcome \
            like `submit --wait`: 0 succeeded, 1 failed, 3 cancelled. A child that has not \
            started is waited for (said on stderr); a retry's next attempt is followed too \
            unless --attempt names one. A coordinator restart is ridden out: no line is lost \
            or printed twice.

            A log over the coordinator's maxLogBytes keeps its head and its newest lines, with \
            a "[cohort: N bytes cut …]" line between. On a terminal, bytes that are not text \
            (invalid UTF-8, control characters) are shown escaped; into a pipe or a file they \
            are written as the child wrote them.

            --json prints one object per line: {"time", "stream", "text", "attempt", "worker", \
            "sequence", "partial"} ("level" for a kind's lines; "bytes", base64, when the text \
            is not UTF-8).

            Examples:
              cohort logs release-3 build -f
              cohort logs release-3 tests/unit --tail 50 --timestamps
              cohort logs release-3 tests/unit --attempt 1 --stderr
              cohort logs release-3 deploy --since 10m --json | jq -r .text
            """
    )

    @Argument(help: ArgumentHelp("A group id.", valueName: "group"))
    var group: String

    @Argument(help: ArgumentHelp("The child's path, e.g. tests/unit.", valueName: "child"))
    var child: String

    @Flag(name: [.short, .long], help: "Keep printing until the attempt ends; exit with its outcome.")
    var follow = false

    @Option(help: ArgumentHelp("This attempt (1 is the first), not the latest.", valueName: "n"))
    var attempt: UInt32?

    @Option(help: ArgumentHelp("Only the last N lines written so far (then, with -f, what follows).", valueName: "n"))
    var tail: UInt32?

    @Option(
        help: ArgumentHelp(
            "Only lines written at or after WHEN: a duration back from now (90s, 30m, 2h) or an ISO 8601 time.",
            valueName: "when"))
    var since: String?

    @Flag(help: "Only stdout.")
    var stdout = false

    @Flag(help: "Only stderr.")
    var stderr = false

    @Flag(help: "Start each line with the time it was written (RFC 3339, UTC).")
    var timestamps = false

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var log: LogOptions

    func validate() throws {
        if stdout, stderr { throw ValidationError("--stdout and --stderr each choose one stream; give one or neither") }
        if attempt == 0 { throw ValidationError("--attempt: attempts count from 1") }
        if tail == 0 { throw ValidationError("--tail: give how many lines, at least 1") }
        if let tail, tail > 10_000 {
            throw ValidationError("--tail: at most 10000 lines; for more, leave --tail out (every line) or use --since")
        }
        if child.isEmpty { throw ValidationError("CHILD: give the child's path, e.g. tests/unit") }
    }

    func run() async throws {
        let logger = log.bootstrap("cohort.logs")
        let since = try since.map { try StatusCommand.time($0, now: Date()) }
        var printer = LogPrinter(
            json: output.json, timestamps: timestamps, streams: streams, terminal: Console.stdoutIsTerminal)
        try await withClient(connection, logger: logger) { client in
            guard follow else {
                let (lines, last) = try await client.allLogs(
                    group, child: child, attempt: attempt ?? 0, tail: tail ?? 0, since: since)
                if last.attempt == 0 {
                    Console.err("cohort: \(group)/\(child) has not started yet (\(last.state)); nothing written")
                }
                printer.print(lines, attempt: last.attempt, worker: last.worker)
                printer.finish()
                return ExitStatus.success
            }
            var final: LogsPage?
            var current: (attempt: UInt32, worker: String) = (0, "")
            // The closure form: a slow reader of stdout (a pipe into `less`) holds the follower
            // back instead of growing a buffer.
            try await client.followLogs(
                group, child: child, attempt: attempt ?? 0, tail: tail ?? 0, since: since
            ) { event in
                switch event {
                case .waiting(let state):
                    Console.err("cohort: waiting for \(group)/\(child) to start (\(state))")
                case .attempt(let number, let worker):
                    if current.attempt != 0 {
                        Console.err("cohort: attempt \(current.attempt) ended; following attempt \(number)")
                    }
                    current = (number, worker)
                case .lines(let lines):
                    printer.print(lines, attempt: current.attempt, worker: current.worker)
                case .ended(let page):
                    final = page
                }
            }
            printer.finish()
            guard let final else { return ExitStatus.success }
            switch final.state {
            case .succeeded, .skipped: return ExitStatus.success
            case .cancelled:
                Console.err("cohort: \(group)/\(child) was cancelled: \(final.error ?? "cancelled")")
                return ExitStatus.groupCancelled
            case .failed:
                Console.err("cohort: \(group)/\(child) failed: \(final.error ?? "failed")")
                return ExitStatus.groupFailed
            case .pending, .waiting, .ready, .running:
                // --attempt N ended while the child goes on (a retry).
                return ExitStatus.groupFailed
            }
        }
    }

    private var streams: Set<LogLine.Stream> {
        if stdout { return [.stdout, .marker] }
        if stderr { return [.stderr, .marker] }
        return Set(LogLine.Stream.allCases)
    }
}

/// Prints log lines as text or JSON lines.
struct LogPrinter {
    let json: Bool
    let timestamps: Bool
    let streams: Set<LogLine.Stream>
    /// Escape what is not text (a terminal would act on control characters).
    let terminal: Bool
    /// The stream whose line the last piece printed left open (`partial`).
    private var open: LogLine.Stream?

    init(json: Bool, timestamps: Bool, streams: Set<LogLine.Stream>, terminal: Bool) {
        self.json = json
        self.timestamps = timestamps
        self.streams = streams
        self.terminal = terminal
    }

    mutating func print(_ lines: [LogLine], attempt: UInt32, worker: String) {
        var out: [UInt8] = []
        for line in lines where streams.contains(line.stream) {
            if json {
                out += Array(line.json(attempt: attempt, worker: worker).jsonString(pretty: false).utf8)
                out.append(UInt8(ascii: "\n"))
                continue
            }
            // A piece that goes on a line another stream interrupted starts a new line.
            if let open, open != line.stream { out.append(UInt8(ascii: "\n")) }
            if open != line.stream {
                if timestamps { out += Array((line.at.rfc3339 + " ").utf8) }
                if line.stream == .kind { out += Array("[\(line.level)] ".utf8) }
            }
            out += terminal ? Self.escaped(line.text) : line.text
            if line.partial {
                open = line.stream
            } else {
                open = nil
                out.append(UInt8(ascii: "\n"))
            }
        }
        if !out.isEmpty { FileHandle.standardOutput.write(Data(out)) }
    }

    /// Ends a line the last piece left open, on a terminal (into a pipe, the bytes stay as the
    /// child wrote them).
    func finish() {
        if open != nil, terminal, !json { FileHandle.standardOutput.write(Data("\n".utf8)) }
    }

    /// The text for a terminal: invalid UTF-8 as U+FFFD, control characters (but tab) as
    /// `^X` or `\u{…}`, so no byte a child wrote can move the cursor or change the terminal.
    static func escaped(_ bytes: [UInt8]) -> [UInt8] {
        var text = ""
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            switch scalar.value {
            case 0x09: text.unicodeScalars.append(scalar)
            case 0x00..<0x20: text += "^" + String(UnicodeScalar(UInt8(scalar.value + 0x40)))
            case 0x7F: text += "^?"
            case 0x80..<0xA0: text += "\\u{\(String(scalar.value, radix: 16))}"
            default: text.unicodeScalars.append(scalar)
            }
        }
        return Array(text.utf8)
    }
}

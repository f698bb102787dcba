import Foundation

/// Writing to stdout and stderr, and what kind of stdout it is.
enum Console {
    /// Writes `text` and a newline to stdout, flushed at once (other processes read it live).
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Writes `text` to stdout as is, flushed at once.
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// Writes `text` and a newline to stderr.
    static func err(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// `cohort: error: <message>` on stderr, one line per line of `message`.
    static func error(_ message: String) {
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        err(lines.map { "cohort: error: \($0)" }.joined(separator: "\n"))
    }

    /// Whether stdout is a terminal (a live view can redraw in place).
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// The terminal's size, or 80×24 when unknown.
    static var terminalSize: (columns: Int, rows: Int) {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        return (80, 24)
    }
}

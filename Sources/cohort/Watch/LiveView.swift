import CohortClient
import Foundation

/// `--watch` on a terminal: the group redrawn in place — a header with the state, a progress
/// bar of finished/total and the elapsed time, then a row per child with its state, worker
/// and elapsed time.
///
/// An actor: events and the clock's ticks both redraw it.
actor LiveView {
    private var model: WatchModel
    private var drawnLines = 0
    private let color: Bool
    /// How many of a running child's last log lines to show under it (`--logs`).
    private let logLines: Int
    /// Each child's last log lines, as shown (escaped for the terminal).
    private var lastLines: [String: [String]] = [:]

    init(group: String, logLines: Int = 0) {
        model = WatchModel(id: group)
        color = ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        self.logLines = logLines
    }

    /// New log lines of running children (``LogTails``).
    func logs(_ found: [LogTails.Lines]) {
        for child in found {
            var kept = lastLines[child.path] ?? []
            for line in child.lines {
                let text = String(decoding: LogPrinter.escaped(line.text), as: UTF8.self)
                kept.append((line.stream == .kind ? "[\(line.level)] " : "") + text)
            }
            lastLines[child.path] = Array(kept.suffix(logLines))
        }
        redraw()
    }

    func apply(_ event: GroupEvent) {
        model.apply(event)
        redraw()
    }

    /// Draws the view over the previous drawing.
    func redraw() {
        let (columns, rows) = Console.terminalSize
        let lines = render(width: columns, height: max(5, rows - 1), now: .now)
        var output = "\u{1B}[?25l"  // hide the cursor while drawing
        if drawnLines > 0 { output += "\u{1B}[\(drawnLines)F" }  // to the start of the first drawn line
        output += "\u{1B}[J" + lines.joined(separator: "\n") + "\n\u{1B}[?25h"
        Console.write(output)
        drawnLines = lines.count
    }

    /// The model, for the caller's summary once the group finished.
    var current: WatchModel { model }

    /// The lines of the view, each at most `width` columns, at most `height` lines.
    func render(width: Int, height: Int, now: WireTimestamp) -> [String] {
        let barWidth = 24
        let total = model.total
        let done = model.finished
        let filled = total == 0 ? 0 : barWidth * done / total
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: barWidth - filled)
        let title = model.name.isEmpty ? model.id : "\(model.name) (\(model.id))"
        var header =
            "\(title)  \(paint(model.state.word, model.state))  \(bar) \(done)/\(total)  \(formatElapsed(model.elapsed(now: now)))"
        if let reason = model.reason, model.state.isFinished { header += "  \(reason)" }
        var lines = [clip(header, width)]

        var children = model.orderedChildren
        let room = height - 2
        var hidden = 0
        if children.count > room {
            // Show what is still moving (and what failed) before what quietly succeeded.
            let busy = children.filter { $0.state != .succeeded }
            let quiet = children.filter { $0.state == .succeeded }
            children = Array((busy + quiet).prefix(room))
            hidden = model.total - children.count
        }
        let nameWidth = min(32, max(8, children.map(\.path.count).max() ?? 8))
        // Rows still to come after each child's, counting the "… more" line.
        var rowsLeft = children.count + (hidden > 0 ? 1 : 0)
        for child in children {
            rowsLeft -= 1
            let worker = child.worker ?? ""
            let elapsed = child.startedAt.map { formatElapsed($0.seconds(until: child.finishedAt ?? now)) } ?? ""
            let detail = (child.error ?? child.waitingReason ?? "").replacingNewlines()
            let state = child.state.word.padding(toLength: 9, withPad: " ", startingAt: 0)
            let row =
                "  \(symbol(child.state)) \(child.path.clipped(to: nameWidth).padding(toLength: nameWidth, withPad: " ", startingAt: 0))  "
                + "\(paint(state, child.state))  \(worker.clipped(to: 16).padding(toLength: 16, withPad: " ", startingAt: 0))  "
                + "\(elapsed.padding(toLength: 7, withPad: " ", startingAt: 0))  \(detail)"
            lines.append(clip(row.trimmingTrailingSpaces(), width))
            // Its last log lines, while it runs and the screen has room beside the rows to come
            // (clipped before dimmed, so the dimming always ends).
            guard child.state == .running, let last = lastLines[child.path] else { continue }
            for text in last where lines.count + rowsLeft < height {
                lines.append("      " + dim(clip("│ " + text, max(width - 6, 2))))
            }
        }
        if hidden > 0 {
            lines.append("  … \(hidden) more (\(model.count(.succeeded)) succeeded in all)")
        }
        return lines
    }

    private func dim(_ text: String) -> String {
        color ? "\u{1B}[2m\(text)\u{1B}[0m" : text
    }

    private func symbol(_ state: ChildState) -> String {
        switch state {
        case .succeeded: "✓"
        case .failed: "✗"
        case .cancelled: "⊘"
        case .skipped: "↷"
        case .running: "▶"
        case .waiting: "…"
        case .ready: "○"
        case .pending: "·"
        }
    }

    private func paint(_ text: String, _ state: ChildState) -> String {
        guard color else { return text }
        let code =
            switch state {
            case .succeeded: "32"
            case .failed: "31"
            case .cancelled: "33"
            case .running: "36"
            case .waiting, .ready, .pending, .skipped: "2"
            }
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }

    private func paint(_ text: String, _ state: GroupState) -> String {
        switch state {
        case .pending: paint(text, ChildState.pending)
        case .running: paint(text, ChildState.running)
        case .succeeded: paint(text, ChildState.succeeded)
        case .failed: paint(text, ChildState.failed)
        case .cancelled: paint(text, ChildState.cancelled)
        }
    }

    /// Cuts a line to `width` visible columns (escape sequences do not count).
    private func clip(_ line: String, _ width: Int) -> String {
        var visible = 0
        var result = ""
        var inEscape = false
        for character in line {
            if character == "\u{1B}" { inEscape = true }
            if inEscape {
                result.append(character)
                if character.isLetter { inEscape = false }
                continue
            }
            if visible >= width - 1 { break }
            result.append(character)
            visible += 1
        }
        return result + (color && line.contains("\u{1B}") ? "\u{1B}[0m" : "")
    }
}

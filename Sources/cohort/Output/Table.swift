/// A plain text table: a header row and rows, columns padded to their widest cell.
struct Table {
    var header: [String]
    var rows: [[String]] = []

    init(_ header: String...) {
        self.header = header
    }

    mutating func add(_ cells: String...) {
        rows.append(cells)
    }

    /// The table's lines; the last column is not padded.
    var lines: [String] {
        let all = [header] + rows
        var widths = [Int](repeating: 0, count: header.count)
        for row in all {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        return all.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }

    var text: String { lines.joined(separator: "\n") }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }

    /// At most `width` characters, with `…` when cut.
    func clipped(to width: Int) -> String {
        guard count > width, width > 0 else { return self }
        return String(prefix(width - 1)) + "…"
    }
}

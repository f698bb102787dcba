/// A quick upper estimate of how deeply a YAML/JSON text nests, taken before the YAML parser
/// runs: the parser recurses once per level, so a hostile `[[[[…` or `- - - -…` a megabyte long
/// would exhaust the stack before any limit in our own code is reached.
///
/// The estimate counts flow brackets outside quoted scalars, comments and block scalars, plus
/// half the indentation and the run of `- `/`? ` indicators that starts each line. libyaml
/// also stops at 1,000 levels; this guard gives the error a name and a line sooner. It can overshoot
/// (the caller allows twice `maxDocumentDepth`); the exact depth is checked after parsing.
enum DocumentDepthGuard {
    /// The largest estimated depth and the 1-based line where it occurs.
    static func estimate(_ text: String) -> (depth: Int, line: Int) {
        var best = (depth: 0, line: 1)
        var flow = 0
        var line = 1
        var atLineStart = true
        var indent = 0
        var lineBlockDepth = 0
        var quote: UInt8? = nil
        var escaped = false
        var previous: UInt8 = UInt8(ascii: "\n")
        var blockScalarParentIndent: Int? = nil
        var lastSignificant: UInt8 = 0
        var skippingComment = false
        var skippingBlockLine = false
        // Still in the run of `- `/`? ` indicators that starts a line.
        var inIndicatorRun = false

        let space = UInt8(ascii: " ")
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\n") {
                // A line ending in `|` or `>` (with optional modifiers) opens a block scalar:
                // its more-indented lines are text, not structure.
                if quote == nil, !skippingBlockLine, flow == 0,
                    lastSignificant == UInt8(ascii: "|") || lastSignificant == UInt8(ascii: ">")
                {
                    blockScalarParentIndent = indent
                }
                line += 1
                atLineStart = true
                indent = 0
                lineBlockDepth = 0
                skippingComment = false
                skippingBlockLine = false
                lastSignificant = 0
                previous = byte
                if quote == UInt8(ascii: "\"") { escaped = false }
                continue
            }
            if skippingComment || skippingBlockLine {
                previous = byte
                continue
            }
            if atLineStart, quote == nil {
                if byte == space {
                    indent += 1
                    previous = byte
                    continue
                }
                atLineStart = false
                if let parent = blockScalarParentIndent {
                    if indent > parent {
                        skippingBlockLine = true
                        previous = byte
                        continue
                    }
                    blockScalarParentIndent = nil
                }
                lineBlockDepth = indent / 2
                inIndicatorRun = true
            }
            if let open = quote {
                if open == UInt8(ascii: "\"") {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == open {
                        quote = nil
                    }
                } else if byte == open {
                    quote = nil
                }
                previous = byte
                lastSignificant = byte
                continue
            }
            switch byte {
            case UInt8(ascii: "#")
            where previous == space || previous == UInt8(ascii: "\t") || previous == UInt8(ascii: "\n"):
                skippingComment = true
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                if previous == space || previous == UInt8(ascii: "\n") || previous == UInt8(ascii: "\t")
                    || previous == UInt8(ascii: "[") || previous == UInt8(ascii: "{")
                    || previous == UInt8(ascii: ",") || previous == UInt8(ascii: ":")
                {
                    quote = byte
                }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                flow += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                flow = max(0, flow - 1)
            case space:
                // `- ` and `? ` at the start of a line nest block collections on that line.
                if flow == 0, inIndicatorRun, previous == UInt8(ascii: "-") || previous == UInt8(ascii: "?") {
                    lineBlockDepth += 1
                }
            case UInt8(ascii: "-"), UInt8(ascii: "?"):
                break
            default:
                inIndicatorRun = false
            }
            if previous != space && byte != space && (previous == UInt8(ascii: "-") || previous == UInt8(ascii: "?")) {
                inIndicatorRun = false  // `-x` is text, not an indicator
            }
            if byte != space && byte != UInt8(ascii: "\t") { lastSignificant = byte }
            let depth = lineBlockDepth + flow
            if depth > best.depth { best = (depth, line) }
            previous = byte
        }
        return best
    }
}

/// Why a string is not a spec duration.
public enum SpecDurationError: Error, Sendable, Hashable, CustomStringConvertible {
    case empty
    /// A number without a unit, `30`: the unit is never implied.
    case missingUnit(String)
    case unknownUnit(String)
    case negative
    case malformed(String)
    /// Longer than `Int64.max` nanoseconds (about 292 years).
    case tooLarge

    public var description: String {
        switch self {
        case .empty:
            return "an empty duration; write e.g. \"30s\""
        case .missingUnit(let number):
            return "a duration needs a unit; write \"\(number)s\" (units: ms, s, m, h, d; e.g. 500ms, 1m30s)"
        case .unknownUnit(let unit):
            return "unknown duration unit \"\(unit)\" (units: ns, us, ms, s, m, h, d)"
        case .negative:
            return "a duration cannot be negative"
        case .malformed(let text):
            return "\"\(text)\" is not a duration (write e.g. 500ms, 2s, 5m, 1h, 1m30s)"
        case .tooLarge:
            return "the duration is too long"
        }
    }
}

extension Duration {
    /// Parses a spec duration: one or more `<number><unit>` parts, `500ms`, `2s`, `5m`, `1h`,
    /// `1m30s`, `1.5h`, `1d`. Units: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`, `d` (24 h).
    /// Fractions are exact down to the nanosecond. A bare number is rejected: the unit is never
    /// guessed.
    public init(specString text: String) throws(SpecDurationError) {
        var nanoseconds: Int64 = 0
        let scalars = Array(text.unicodeScalars)
        if scalars.isEmpty { throw .empty }
        if scalars.first == "-" { throw .negative }
        var position = 0

        func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 48 && scalar.value <= 57 }

        while position < scalars.count {
            var whole: Int64 = 0
            var fraction: [Int64] = []
            let numberStart = position
            while position < scalars.count, isDigit(scalars[position]) {
                let (times10, overflow1) = whole.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(Int64(scalars[position].value - 48))
                if overflow1 || overflow2 { throw .tooLarge }
                whole = sum
                position += 1
            }
            let wholeDigits = position - numberStart
            if position < scalars.count, scalars[position] == "." {
                position += 1
                while position < scalars.count, isDigit(scalars[position]) {
                    fraction.append(Int64(scalars[position].value - 48))
                    position += 1
                }
            }
            if wholeDigits == 0 && fraction.isEmpty { throw .malformed(text) }
            let unitStart = position
            while position < scalars.count, !isDigit(scalars[position]), scalars[position] != "." {
                position += 1
            }
            let unit = String(String.UnicodeScalarView(scalars[unitStart..<position]))
            if unit.isEmpty {
                if unitStart == scalars.count && numberStart == 0 { throw .missingUnit(text) }
                throw .malformed(text)
            }
            guard let scale = Duration.nanosecondsPerUnit[unit] else {
                if unit.allSatisfy({ $0.isLetter || $0 == "µ" }) { throw .unknownUnit(unit) }
                throw .malformed(text)
            }
            let (wholePart, overflow) = whole.multipliedReportingOverflow(by: scale)
            if overflow { throw .tooLarge }
            // Digit by digit keeps fractions exact: every unit is a whole number of nanoseconds.
            var fractionPart: Int64 = 0
            var place = scale
            for digit in fraction {
                place /= 10
                fractionPart += digit * place
            }
            let (partTotal, overflow3) = wholePart.addingReportingOverflow(fractionPart)
            let (total, overflow4) = nanoseconds.addingReportingOverflow(partTotal)
            if overflow3 || overflow4 { throw .tooLarge }
            nanoseconds = total
        }
        self = .nanoseconds(nanoseconds)
    }

    static let nanosecondsPerUnit: [String: Int64] = [
        "ns": 1,
        "us": 1_000,
        "µs": 1_000,  // U+00B5 MICRO SIGN
        "μs": 1_000,  // U+03BC GREEK SMALL LETTER MU
        "ms": 1_000_000,
        "s": 1_000_000_000,
        "m": 60_000_000_000,
        "h": 3_600_000_000_000,
        "d": 86_400_000_000_000,
    ]

    /// The canonical spec form, which parses back to the same duration (to the nanosecond):
    /// `1h30m`, `1m30s500ms`, `250us`, `0s`. Days are written as hours.
    public var specString: String {
        var (seconds, attoseconds) = components
        var sign = ""
        if seconds < 0 || attoseconds < 0 {
            sign = "-"
            seconds = -seconds
            attoseconds = -attoseconds
        }
        let subsecond = attoseconds / 1_000_000_000
        let parts: [(Int64, String)] = [
            (seconds / 3600, "h"), (seconds / 60 % 60, "m"), (seconds % 60, "s"),
            (subsecond / 1_000_000, "ms"), (subsecond / 1_000 % 1_000, "us"), (subsecond % 1_000, "ns"),
        ]
        let text = parts.filter { $0.0 != 0 }.map { "\($0.0)\($0.1)" }.joined()
        return text.isEmpty ? "0s" : sign + text
    }
}

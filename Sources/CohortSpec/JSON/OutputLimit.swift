import Foundation

/// Cuts a child's output (UTF-8 JSON) down to a size limit, visibly: never silently.
///
/// The longest strings are cut first, each keeping its beginning and its end around a marker
/// `…[cohort: N bytes cut: the output was over maxOutputBytes]…`, so a `shell` child's stdout
/// keeps its first and last lines and the JSON keeps its shape. An output that still does not
/// fit (large arrays of numbers, say) becomes one string: the marker and the beginning of the
/// original JSON text.
public enum OutputLimit {
    /// The marker put where `cut` bytes were taken out.
    public static func marker(cut: Int) -> String { "…[cohort: \(cut) bytes cut: the output was over maxOutputBytes]…" }

    /// The text every marker contains, for tests and readers.
    public static let markerText = "[cohort: "

    /// `output` unchanged if it has at most `limit` bytes; otherwise a cut-down version of at
    /// most `limit` bytes, and `truncated` true.
    public static func fit(_ output: Data, limit: Int) -> (output: Data, truncated: Bool) {
        guard output.count > limit else { return (output, false) }
        if var value = try? JSONValue(jsonData: output) {
            for _ in 0..<64 {
                let encoded = value.jsonData()
                if encoded.count <= limit { return (encoded, true) }
                let longest = value.longestString
                guard longest > 256 else { break }
                // Cut the excess, and a little more for the marker and escapes.
                let keep = max(128, longest - (encoded.count - limit) - 128)
                value.cutFirstString(ofLength: longest, keeping: keep)
            }
        }
        let text = String(decoding: output, as: UTF8.self)
        let marker = marker(cut: output.count)
        let head = Self.head(of: Substring(text), bytes: max(0, limit / 2 - marker.utf8.count))
        return (JSONValue.string(marker + head).jsonData(), true)
    }

    /// The longest prefix of `text` with at most `bytes` UTF-8 bytes, whole scalars only.
    static func head(of text: Substring, bytes: Int) -> String {
        var count = 0
        var end = text.unicodeScalars.startIndex
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            if count + size > bytes { break }
            count += size
            end = text.unicodeScalars.index(after: end)
        }
        return String(text.unicodeScalars[..<end])
    }

    /// The longest suffix of `text` with at most `bytes` UTF-8 bytes, whole scalars only.
    static func tail(of text: Substring, bytes: Int) -> String {
        var count = 0
        var start = text.unicodeScalars.endIndex
        for scalar in text.unicodeScalars.reversed() {
            let size = String(scalar).utf8.count
            if count + size > bytes { break }
            count += size
            start = text.unicodeScalars.index(before: start)
        }
        return String(text.unicodeScalars[start...])
    }
}

extension JSONValue {
    /// The UTF-8 length of the longest string anywhere in the value (keys excluded).
    fileprivate var longestString: Int {
        switch self {
        case .string(let text): text.utf8.count
        case .array(let items): items.map(\.longestString).max() ?? 0
        case .object(let members): members.values.map(\.longestString).max() ?? 0
        default: 0
        }
    }

    /// Cuts the first string of `length` bytes to about `keep` bytes, its head and tail around
    /// a marker. Returns whether it found one.
    @discardableResult
    fileprivate mutating func cutFirstString(ofLength length: Int, keeping keep: Int) -> Bool {
        switch self {
        case .string(let text) where text.utf8.count == length:
            let whole = Substring(text)
            self = .string(
                OutputLimit.head(of: whole, bytes: keep / 2) + OutputLimit.marker(cut: length - keep)
                    + OutputLimit.tail(of: whole, bytes: keep / 2))
            return true
        case .array(var items):
            for index in items.indices where items[index].cutFirstString(ofLength: length, keeping: keep) {
                self = .array(items)
                return true
            }
            return false
        case .object(var members):
            for key in members.keys.sorted() where members[key]!.cutFirstString(ofLength: length, keeping: keep) {
                self = .object(members)
                return true
            }
            return false
        default:
            return false
        }
    }
}

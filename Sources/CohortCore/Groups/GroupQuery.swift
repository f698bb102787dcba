/// Which groups `cohort status` lists: every filter set must match. Newest submission first,
/// at most ``limit``. The scheduler answers it for the groups it holds, the journal for the
/// finished ones it keeps; the coordinator merges the two.
public struct GroupQuery: Hashable, Sendable {
    /// Any of these phases; empty: every phase.
    public var phases: Set<GroupPhase>
    /// A glob the group's name matches (``Glob``); nil: any name.
    public var nameGlob: Glob?
    /// Submitted at or after this time; nil: any time.
    public var submittedSince: Timestamp?
    /// At most this many groups, the newest; 0: every one (at most ``maxGroups``).
    public var limit: Int

    /// The most groups one list holds, whatever its ``limit``: the journal's query returns at
    /// most this many, and the merged list is cut to it.
    public static let maxGroups = 10_000

    /// The most groups this list holds: ``limit``, or ``maxGroups`` when the limit is 0 or
    /// larger.
    public var effectiveLimit: Int { limit == 0 ? Self.maxGroups : min(limit, Self.maxGroups) }

    public init(phases: Set<GroupPhase> = [], nameGlob: Glob? = nil, submittedSince: Timestamp? = nil, limit: Int = 0) {
        self.phases = phases
        self.nameGlob = nameGlob
        self.submittedSince = submittedSince
        self.limit = max(limit, 0)
    }

    /// Whether `group` passes every filter (the limit aside).
    public func matches(_ group: GroupSnapshot) -> Bool {
        (phases.isEmpty || phases.contains(group.phase))
            && (submittedSince.map { group.submittedAt >= $0 } ?? true)
            && (nameGlob?.matches(group.name) ?? true)
    }

    /// Whether a finished group can match (false when only unfinished phases are asked for).
    public var wantsFinished: Bool { phases.isEmpty || phases.contains { $0.isFinished } }

    /// The order of the list: newest submission first, then by id (descending) for groups
    /// submitted at the same instant.
    public static func newerFirst(_ lhs: GroupSnapshot, _ rhs: GroupSnapshot) -> Bool {
        lhs.submittedAt != rhs.submittedAt ? lhs.submittedAt > rhs.submittedAt : lhs.id > rhs.id
    }

    /// Merges what the scheduler holds with what the journal read (newest first, at most
    /// ``effectiveLimit``, as ``JournalReader`` answers): one entry per id, newest first, cut
    /// to ``effectiveLimit``.
    ///
    /// A group both know is listed as the scheduler has it (the newer), unless the journal's
    /// entry is finished and the scheduler's is not: `held` is taken when the list is asked
    /// for, and the journal may have committed the group's end since.
    ///
    /// When the journal returned a full page (``effectiveLimit`` rows), it did not read the
    /// finished groups older than its last row, so the held groups older than that row are
    /// dropped too: listing them would leave gaps (groups between them the journal did not
    /// read), newest-first order would lie.
    public func merge(held: [GroupSnapshot], journaled: [GroupSnapshot]) -> [GroupSnapshot] {
        var indexByID: [String: Int] = [:]
        var merged: [GroupSnapshot] = []
        merged.reserveCapacity(held.count + journaled.count)
        for group in held where matches(group) && indexByID[group.id] == nil {
            indexByID[group.id] = merged.count
            merged.append(group)
        }
        for group in journaled where matches(group) {
            if let index = indexByID[group.id] {
                if group.phase.isFinished && !merged[index].phase.isFinished { merged[index] = group }
            } else {
                indexByID[group.id] = merged.count
                merged.append(group)
            }
        }
        merged.sort(by: Self.newerFirst)
        let limit = effectiveLimit
        if journaled.count >= limit, let oldestRead = journaled.last,
            let cut = merged.firstIndex(where: { Self.newerFirst(oldestRead, $0) })
        {
            merged.removeSubrange(cut...)
        }
        if merged.count > limit { merged.removeLast(merged.count - limit) }
        return merged
    }
}

/// A shell-style glob on names: `*` any run of characters, `?` one character, `[abc]` one
/// of them, `[a-z]` a range, `[!a-z]` or `[^a-z]` none of them. Case-sensitive; there is no
/// escape character: `[*]` matches a `*`. The same matching as SQLite's `GLOB` (the
/// journal's query uses it, with `[!` written `[^`).
public struct Glob: Hashable, Sendable, CustomStringConvertible {
    /// The pattern as given.
    public let pattern: String
    private let scalars: [Unicode.Scalar]

    /// - Throws: ``GlobError`` for a `[` without its `]`, or an empty pattern.
    public init(_ pattern: String) throws(GlobError) {
        guard !pattern.isEmpty else { throw GlobError("the name glob is empty") }
        let scalars = Array(pattern.unicodeScalars)
        var index = 0
        while index < scalars.count {
            if scalars[index] == "[" {
                guard let end = Self.closingBracket(scalars, from: index) else {
                    throw GlobError("the name glob \"\(pattern)\" has a \"[\" without its \"]\" (write [[] for a [)")
                }
                index = end
            }
            index += 1
        }
        self.pattern = pattern
        self.scalars = scalars
    }

    public var description: String { pattern }

    /// The pattern for SQLite's `GLOB` (`[!` becomes `[^`).
    public var sqlitePattern: String {
        var text = ""
        var index = 0
        while index < scalars.count {
            if scalars[index] == "[", let end = Self.closingBracket(scalars, from: index) {
                text.unicodeScalars.append("[")
                var inner = index + 1
                if scalars[inner] == "!" {
                    text.unicodeScalars.append("^")
                    inner += 1
                }
                text.unicodeScalars.append(contentsOf: scalars[inner...end])
                index = end + 1
            } else {
                text.unicodeScalars.append(scalars[index])
                index += 1
            }
        }
        return text
    }

    /// Whether `name` matches the whole pattern.
    public func matches(_ name: String) -> Bool {
        let text = Array(name.unicodeScalars)
        // Iterative matching with backtracking to the last `*` (linear in most cases).
        var (p, t) = (0, 0)
        var star: (p: Int, t: Int)?
        while t < text.count {
            if p < scalars.count {
                switch scalars[p] {
                case "*":
                    star = (p, t)
                    p += 1
                    continue
                case "?":
                    p += 1
                    t += 1
                    continue
                case "[":
                    if let end = Self.closingBracket(scalars, from: p), Self.set(scalars[(p + 1)..<end], has: text[t]) {
                        p = end + 1
                        t += 1
                        continue
                    }
                default:
                    if scalars[p] == text[t] {
                        p += 1
                        t += 1
                        continue
                    }
                }
            }
            guard let last = star else { return false }
            star = (last.p, last.t + 1)
            p = last.p + 1
            t = last.t + 1
        }
        while p < scalars.count, scalars[p] == "*" { p += 1 }
        return p == scalars.count
    }

    /// The index of the `]` closing the set opened at `start` (a `]` first in the set, after
    /// an optional `!` or `^`, is a member), or nil.
    private static func closingBracket(_ scalars: [Unicode.Scalar], from start: Int) -> Int? {
        var index = start + 1
        if index < scalars.count, scalars[index] == "!" || scalars[index] == "^" { index += 1 }
        if index < scalars.count, scalars[index] == "]" { index += 1 }
        while index < scalars.count {
            if scalars[index] == "]" { return index }
            index += 1
        }
        return nil
    }

    /// Whether the set's text (between the brackets) has `scalar`.
    private static func set(_ body: ArraySlice<Unicode.Scalar>, has scalar: Unicode.Scalar) -> Bool {
        var items = Array(body)
        var negated = false
        if let first = items.first, first == "!" || first == "^" {
            negated = true
            items.removeFirst()
        }
        var found = false
        var index = 0
        while index < items.count {
            if index + 2 < items.count, items[index + 1] == "-" {
                if items[index] <= scalar && scalar <= items[index + 2] { found = true }
                index += 3
            } else {
                if items[index] == scalar { found = true }
                index += 1
            }
        }
        return found != negated
    }
}

/// A glob that cannot be used, with the words to say why.
public struct GlobError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

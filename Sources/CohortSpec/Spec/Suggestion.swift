/// "Did you mean" for typos in field names, enum values and child names.
enum Suggestion {
    /// The candidate closest to `word`, if close enough to be a likely typo: equal ignoring case,
    /// `-` and `_` (`on_child_failure` → `onChildFailure`), or within a small edit distance.
    static func closest(to word: String, in candidates: some Sequence<String>) -> String? {
        let normalizedWord = normalize(word)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates where candidate != word {
            if normalize(candidate) == normalizedWord { return candidate }
            let normalizedCandidate = normalize(candidate)
            let distance = editDistance(normalizedWord, normalizedCandidate)
            let shorter = min(normalizedWord.count, normalizedCandidate.count)
            let allowed = max(1, shorter / 3)
            // A long shared start also counts: `sequential` for `sequence`.
            let sharedStart = zip(normalizedWord, normalizedCandidate).prefix { $0 == $1 }.count
            let close = distance <= allowed || (sharedStart >= 4 && sharedStart * 2 >= shorter)
            if close, distance < (best?.distance ?? .max) {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// `; did you mean "x"?` or the empty string.
    static func didYouMean(_ word: String, in candidates: some Sequence<String>) -> String {
        closest(to: word, in: candidates).map { "; did you mean \"\($0)\"?" } ?? ""
    }

    private static func normalize(_ word: String) -> String {
        String(word.lowercased().filter { $0 != "-" && $0 != "_" })
    }

    /// Levenshtein distance with adjacent transpositions counted as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousPrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previousPrevious[j - 2] + 1)
                }
            }
            (previousPrevious, previous, current) = (previous, current, previousPrevious)
        }
        return previous[b.count]
    }
}

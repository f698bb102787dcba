extension JSONValue {
    /// The part of this value at `path`, or `nil` when a member is missing, an index is out of
    /// range, or a step meets the wrong type. The root path returns the value itself.
    public func select(_ path: JSONPath) -> JSONValue? {
        var value = self
        for segment in path.segments {
            switch (segment, value) {
            case (.key(let key), .object(let members)):
                guard let member = members[key] else { return nil }
                value = member
            case (.index(let index), .array(let elements)):
                guard elements.indices.contains(index) else { return nil }
                value = elements[index]
            default:
                return nil
            }
        }
        return value
    }

    /// A copy of this value with `newValue` written at `path`; the root path returns `newValue`.
    ///
    /// Missing members are created, and a step that meets anything other than an object (for a
    /// name) or an array (for an index) replaces it with an empty one, so writing always succeeds:
    /// `null.setting("env.VERSION", to: "1.2")` is `{"env": {"VERSION": "1.2"}}`. An index past
    /// the end of an array pads it with `null`.
    public func setting(_ path: JSONPath, to newValue: JSONValue) -> JSONValue {
        setting(path.segments[...], to: newValue)
    }

    /// Writes `newValue` at `path` in place; see `setting(_:to:)`.
    public mutating func set(_ path: JSONPath, to newValue: JSONValue) {
        self = setting(path, to: newValue)
    }

    private func setting(_ segments: ArraySlice<JSONPath.Segment>, to newValue: JSONValue) -> JSONValue {
        guard let first = segments.first else { return newValue }
        let rest = segments.dropFirst()
        switch first {
        case .key(let key):
            var members = objectValue ?? [:]
            members[key] = (members[key] ?? .null).setting(rest, to: newValue)
            return .object(members)
        case .index(let index):
            var elements = arrayValue ?? []
            if index >= elements.count {
                elements.append(contentsOf: repeatElement(JSONValue.null, count: index - elements.count + 1))
            }
            elements[index] = elements[index].setting(rest, to: newValue)
            return .array(elements)
        }
    }
}

import Foundation
import Testing

@testable import CohortSpec

/// The errors parsing `text` reports; empty when it parses.
func specErrors(
    _ text: String, format: SpecFormat = .yaml, sourceName: String? = "test.yaml", limits: SpecLimits = .default
) -> [SpecError] {
    do {
        _ = try SpecParser.parse(text: text, format: format, sourceName: sourceName, limits: limits)
        return []
    } catch {
        return error.errors
    }
}

/// Expects parsing `text` to fail with an error at `path` whose message contains `message`.
func expectSpecError(
    _ text: String, at path: String, containing message: String, format: SpecFormat = .yaml,
    limits: SpecLimits = .default, sourceLocation: SourceLocation = #_sourceLocation
) {
    let errors = specErrors(text, format: format, limits: limits)
    let found = errors.contains { $0.path == path && $0.message.contains(message) }
    #expect(
        found, "expected \(path): …\(message)…, got:\n\(SpecErrors(errors).description)",
        sourceLocation: sourceLocation)
}

/// Expects `text` to parse, and returns the spec.
func parseSpec(
    _ text: String, format: SpecFormat = .yaml, sourceName: String? = "test.yaml",
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> GroupSpec {
    do {
        return try SpecParser.parse(text: text, format: format, sourceName: sourceName)
    } catch {
        Issue.record("expected the spec to parse, got:\n\(error)", sourceLocation: sourceLocation)
        throw error
    }
}

/// Parses the spec file at `path` as the CLI does: the format by its extension, the source
/// name (and so the default group name) by its path. The library reads no files itself.
func parseSpecFile(_ path: String, limits: SpecLimits = .default) throws(SpecErrors) -> GroupSpec {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
        throw SpecErrors([SpecError(.unreadable, path: "", "cannot read \(path)")], sourceName: path)
    }
    return try SpecParser.parse(text: text, format: SpecFormat(path: path), sourceName: path, limits: limits)
}

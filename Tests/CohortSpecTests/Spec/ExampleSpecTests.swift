import Foundation
import Testing

@testable import CohortSpec

/// Every file in `examples/`: valid ones parse, each one in `examples/invalid/` fails with the
/// error its first line (`# expect: …`) names.
@Suite struct ExampleSpecTests {
    static let examples: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Spec
        .deletingLastPathComponent()  // CohortCoreTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("examples")

    static func specFiles(in folder: URL) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") || $0.hasSuffix(".json") }.sorted()
    }

    static let validFiles = specFiles(in: examples)
    static let invalidFiles = specFiles(in: examples.appendingPathComponent("invalid"))

    @Test func examplesFolderHasTheRequiredSpecs() {
        for required in [
            "release.yaml", "fan-out.yaml", "exclusive.yaml", "cancellation.yaml", "matrix.yaml",
        ] {
            #expect(Self.validFiles.contains(required), "missing examples/\(required)")
        }
        #expect(Self.invalidFiles.count >= 10)
    }

    @Test(arguments: validFiles)
    func validExampleParses(_ file: String) throws {
        let path = Self.examples.appendingPathComponent(file).path
        let spec = try parseSpecFile(path)
        #expect(!spec.children.isEmpty)
        #expect(spec.name == SpecFormat.splitName(file).base)
    }

    @Test(arguments: invalidFiles)
    func invalidExampleFailsWithTheErrorItsCommentNames(_ file: String) throws {
        let path = Self.examples.appendingPathComponent("invalid").appendingPathComponent(file).path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let firstLine = text.prefix { $0 != "\n" }
        let marker = "# expect: "
        try #require(firstLine.hasPrefix(marker), "\(file) must start with `# expect: <error>`")
        let expected = String(firstLine.dropFirst(marker.count))
        do {
            let spec = try parseSpecFile(path)
            Issue.record("\(file) parsed, but should fail with: \(expected)\n\(spec)")
        } catch {
            #expect(
                error.errors.contains { $0.description.hasPrefix(expected) },
                "\(file): expected an error starting \(expected), got:\n\(error)")
        }
    }
}

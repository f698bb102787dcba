import Foundation
import Testing

@testable import CohortSpec

@Suite struct OutputLimitTests {
    @Test func anOutputWithinTheLimitIsKeptAsItIs() {
        let output = Data(#"{"stdout":"hello"}"#.utf8)
        let (kept, truncated) = OutputLimit.fit(output, limit: 1024)
        #expect(kept == output)
        #expect(!truncated)
    }

    @Test func theLongestStringsAreCutKeepingTheirHeadAndTailAroundTheMarker() throws {
        let stdout = "first line\n" + String(repeating: "é", count: 20_000) + "\nlast line"
        let value: JSONValue = ["exitCode": 0, "stdout": .string(stdout), "stderr": "warning: short"]
        let (kept, truncated) = OutputLimit.fit(value.jsonData(), limit: 4096)
        #expect(truncated)
        #expect(kept.count <= 4096)
        let result = try JSONValue(jsonData: kept)
        #expect(result["exitCode"] == 0)
        #expect(result["stderr"] == "warning: short")
        let cut = try #require(result["stdout"]?.stringValue)
        #expect(cut.hasPrefix("first line\n"))
        #expect(cut.hasSuffix("\nlast line"))
        #expect(cut.contains(OutputLimit.markerText))
        #expect(!cut.contains("\u{FFFD}"), "cut on scalar boundaries")
    }

    @Test func anOutputWithoutLongStringsBecomesTheMarkerAndItsBeginning() throws {
        let value = JSONValue.array((0..<5_000).map { JSONValue.int(Int64($0)) })
        let (kept, truncated) = OutputLimit.fit(value.jsonData(), limit: 2048)
        #expect(truncated)
        #expect(kept.count <= 2048)
        let text = try #require(try JSONValue(jsonData: kept).stringValue)
        #expect(text.hasPrefix("…" + OutputLimit.markerText))
        #expect(text.contains("[0,1,2,3"))
    }

    @Test func outputThatIsNotJSONIsCutToo() {
        let (kept, truncated) = OutputLimit.fit(Data(repeating: 0x41, count: 10_000), limit: 1024)
        #expect(truncated)
        #expect(kept.count <= 1024)
        #expect((try? JSONValue(jsonData: kept))?.stringValue?.contains(OutputLimit.markerText) == true)
    }
}

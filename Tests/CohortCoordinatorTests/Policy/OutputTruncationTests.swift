import CohortCore
import CohortSpec
import CohortWire
import Foundation
import Testing

@testable import CohortCoordinator

@Suite struct OutputTruncationTests {
    @Test func anOutputWithinTheLimitIsKeptAsItIs() {
        let output = Data(#"{"text":"hi"}"#.utf8)
        let kept = OutputTruncation.keep(.succeeded(output: output), limit: output.count)
        #expect(kept == OutputTruncation.Kept(outcome: .succeeded(output: output), truncated: false))
    }

    @Test func anOutputOverTheLimitIsCutVisiblyAndFlagged() throws {
        let output = Data(#"{"text":"\#(String(repeating: "x", count: 10_000))"}"#.utf8)
        let kept = OutputTruncation.keep(.succeeded(output: output), limit: 1000)
        #expect(kept.truncated)
        #expect(kept.receivedBytes == output.count)
        guard case .succeeded(let cut) = kept.outcome else {
            Issue.record("not a success: \(kept.outcome)")
            return
        }
        #expect(cut.count <= 1000)
        #expect(String(decoding: cut, as: UTF8.self).contains(OutputLimit.markerText))
    }

    @Test func failuresAreNeverCut() {
        let error = String(repeating: "e", count: 5000)
        let kept = OutputTruncation.keep(.failed(error: error), limit: 10)
        #expect(kept == OutputTruncation.Kept(outcome: .failed(error: error), truncated: false))
    }

    static let children = [
        ChildSnapshot(name: "build", path: "build", isGroup: true, phase: .succeeded),
        ChildSnapshot(name: "a", path: "build/a", phase: .succeeded, outputTruncated: true),
        ChildSnapshot(name: "b", path: "build/b", phase: .succeeded),
        ChildSnapshot(name: "test", path: "test", phase: .succeeded),
    ]

    @Test func aProceduresResultIsTruncatedByItsOwnFlag() throws {
        var asked = false
        let cut = try OutputTruncation.ofResult(path: "build/a", child: Self.children[1]) {
            () throws(SchedulerError) in
            asked = true
            return Self.children
        }
        #expect(cut)
        #expect(try !OutputTruncation.ofResult(path: "test", child: Self.children[3]) { Self.children })
        #expect(!asked, "a procedure's own flag needs no snapshot of the group")
    }

    @Test func aGroupsResultIsTruncatedWhenAnyProcedureInsideItWasCut() throws {
        #expect(try OutputTruncation.ofResult(path: nil, child: nil) { Self.children })
        #expect(try OutputTruncation.ofResult(path: "build", child: Self.children[0]) { Self.children })
        let clean = Self.children.map { child in
            var child = child
            child.outputTruncated = false
            return child
        }
        #expect(try !OutputTruncation.ofResult(path: nil, child: nil) { clean })
        // `build2/…` is not inside `build`.
        let sibling = [ChildSnapshot(name: "x", path: "build2/x", phase: .succeeded, outputTruncated: true)]
        #expect(try !OutputTruncation.ofResult(path: "build", child: Self.children[0]) { sibling })
    }
}

import Foundation
import Testing

@testable import CohortSpec

private struct Image: Codable, Sendable, Equatable {
    var path: String
    var width: Int
}

private struct Batch: Codable, Sendable, Equatable {
    var images: [Image]
}

private let resize = Kind<Batch, Int>("resize")

@Suite struct TypedSpecTests {
    @Test func jsonValueBridgesCodableValuesBothWays() throws {
        let batch = Batch(images: [Image(path: "a.png", width: 640)])
        let value = try JSONValue(encoding: batch)
        #expect(value == ["images": [["path": "a.png", "width": 640]]])
        #expect(try value.decode(Batch.self) == batch)
    }

    @Test func aValueThatDoesNotDecodeNamesTheMemberAtFault() throws {
        let value: JSONValue = ["images": [["path": "a.png", "width": 640], ["path": "b.png"]]]
        #expect(throws: JSONDecodingError(path: JSONPath.key("images").index(1).key("width"), message: "missing")) {
            try value.decode(Batch.self)
        }
        let wrong: JSONValue = ["images": [["path": 3, "width": 1]]]
        do {
            _ = try wrong.decode(Batch.self)
            Issue.record("decoded a number as a string")
        } catch {
            #expect(error.description == "images[0].path: expected a string")
        }
    }

    @Test func pathsBuiltAtRunTimeNeedNoQuotingAndParseBack() throws {
        for index in 0..<3 {
            let path = JSONPath.key("items").index(index).key("app.kubernetes.io/name")
            #expect(path.description == "items[\(index)][\"app.kubernetes.io/name\"]")
            #expect(try JSONPath(parsing: path.description) == path)
        }
        #expect(throws: JSONPathError.self) { try JSONPath(parsing: "items[\("x")]") }
    }

    @Test func aTypedChildCarriesItsKindAndEncodedInput() throws {
        let child = try ChildSpec("small", resize, Batch(images: [Image(path: "a.png", width: 10)]), after: ["fetch"])
        #expect(child.run == "resize")
        #expect(child.input == ["images": [["path": "a.png", "width": 10]]])
        #expect(child.after == ["fetch"])
        #expect(throws: EncodingError.self) { try ChildSpec("nan", Kind<Double, Int>("n"), .nan) }
    }

    @Test func theBuilderTakesLoopsConditionalsAndThrowingChildren() throws {
        let widths = [100, 200, 300]
        for thumbnails in [true, false] {
            let spec = try GroupSpec("images") {
                for width in widths {
                    try ChildSpec("resize-\(width)", resize, Batch(images: [Image(path: "a.png", width: width)]))
                }
                if thumbnails {
                    ChildSpec("thumbs", run: "echo", after: widths.map { "resize-\($0)" })
                } else {
                    ChildSpec("none", run: "echo")
                }
            }
            #expect(
                spec.children.map(\.name) == ["resize-100", "resize-200", "resize-300", thumbnails ? "thumbs" : "none"])
            try spec.validate()
        }
    }

    @Test func aNegativeIndexBuiltInSwiftIsASpecErrorNotATrap() {
        let spec = GroupSpec("neg") {
            ChildSpec("a", run: "echo")
            ChildSpec("b", run: "echo", inject: [Injection(from: "a", into: JSONPath.key("items").index(-1))])
        }
        do {
            try spec.validate()
            Issue.record("a negative index was accepted")
        } catch {
            #expect(error.errors.map(\.path) == ["children[1].inject[0].into"], "\(error)")
        }
    }
}

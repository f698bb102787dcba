import CohortTestSupport
import Foundation
import SwiftProtobuf
import Testing

@testable import CohortWire

/// The hand-framed batch bodies (RepeatedMessageField) against SwiftProtobuf's
/// own encoding and decoding of the wrapper messages the schema declares.
@Suite struct RepeatedMessageFieldTests {
    static func protoAttempts(_ count: Int) -> [Cohort_Wire_V1_Attempt] {
        BatchingTests.dispatches(count).map(\.proto)
    }

    @Test(arguments: [0, 1, 2, 3, 64, 300])
    func framingWritesTheBytesSwiftProtobufWritesForTheWrapper(count: Int) throws {
        let tasks = Self.protoAttempts(count)
        var dispatch = Cohort_Wire_V1_Dispatch()
        dispatch.attempts = tasks
        let expected: [UInt8] = try dispatch.serializedBytes()
        #expect(try RepeatedMessageField.encode(tasks) { $0 } == expected)
    }

    @Test func aLargeItemGetsAMultiByteLength() throws {
        var task = Cohort_Wire_V1_Attempt()
        task.input = Data(repeating: 0x61, count: 70_000)
        var dispatch = Cohort_Wire_V1_Dispatch()
        dispatch.attempts = [task, task]
        let expected: [UInt8] = try dispatch.serializedBytes()
        #expect(try RepeatedMessageField.encode([task, task]) { $0 } == expected)
    }

    /// Decodes `bytes` both ways: nil for a refusal, else the items.
    func decodeBothWays(_ bytes: [UInt8]) -> (ours: [Cohort_Wire_V1_Attempt]?, theirs: [Cohort_Wire_V1_Attempt]?) {
        var items: [Cohort_Wire_V1_Attempt] = []
        let ours: [Cohort_Wire_V1_Attempt]? = bytes.withUnsafeBytes { buffer in
            do throws(BodyError) {
                try RepeatedMessageField.decode(buffer, as: Cohort_Wire_V1_Attempt.self) { item, _ in items.append(item)
                }
                return items
            } catch {
                return nil
            }
        }
        let theirs = try? Cohort_Wire_V1_Dispatch(serializedBytes: bytes, options: decodingOptions).attempts
        return (ours, theirs)
    }

    @Test func unknownFieldsAroundTheItemsAreSkipped() throws {
        let item: [UInt8] = try Self.protoAttempts(1)[0].serializedBytes()
        // field 2 varint, field 3 fixed64, the item, field 4 length-delimited, field 5 fixed32
        var body: [UInt8] = [0x10, 0x96, 0x01, 0x19, 1, 2, 3, 4, 5, 6, 7, 8]
        body += [0x0A, UInt8(item.count)] + item
        body += [0x22, 0x02, 0xAA, 0xBB, 0x2D, 1, 2, 3, 4]
        let (ours, theirs) = decodeBothWays(body)
        #expect(ours?.count == 1)
        #expect(ours == theirs)
    }

    @Test func field1WithAnotherWireTypeAndGroupsAreSkippedLikeSwiftProtobufDoes() throws {
        let item: [UInt8] = try Self.protoAttempts(1)[0].serializedBytes()
        // field 1 as a varint, a group 2 holding a varint field 3, then the item
        let body: [UInt8] = [0x08, 0x2A, 0x13, 0x18, 0x01, 0x14, 0x0A, UInt8(item.count)] + item
        let (ours, theirs) = decodeBothWays(body)
        #expect(ours?.count == 1)
        #expect(ours == theirs)
    }

    @Test func malformedBodiesAreRefused() {
        let bodies: [[UInt8]] = [
            [0x0A],  // key without length
            [0x0A, 0x05, 0x08],  // length past the end
            [0x09, 1, 2, 3],  // field 1 as a truncated fixed64
            [0x0B],  // field 1 as a start-group, never ended
            [0x0C],  // an end-group without a start
            [0x13, 0x1C],  // group 2 ended as group 3
            [0x0F],  // wire type 7
            [0x00],  // field number 0
            [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],  // varint over 64 bits
            [0x0A, 0x02, 0xFF, 0xFF],  // an item that is not a Task
        ]
        for body in bodies {
            let (ours, theirs) = decodeBothWays(body)
            #expect(ours == nil, "\(body)")
            #expect(theirs == nil, "SwiftProtobuf accepts \(body)")
        }
    }

    /// On random and mutated bodies, the framing reader accepts exactly what
    /// SwiftProtobuf accepts, with the same items.
    @Test func theReaderAgreesWithSwiftProtobufOnMutatedBodies() throws {
        let seeds: [[UInt8]] = try [1, 2, 5].map { count in
            var dispatch = Cohort_Wire_V1_Dispatch()
            dispatch.attempts = Self.protoAttempts(count)
            return try dispatch.serializedBytes()
        }
        var rng = SeededGenerator(seed: 0x5EED)
        var agreements = 0
        for round in 0..<20_000 {
            let seed = seeds[round % seeds.count]
            let body = FrameMutator.mutate([seed], &rng).first ?? []
            let (ours, theirs) = decodeBothWays(body)
            #expect(ours == theirs, "round \(round): \(body)")
            if ours != nil { agreements += 1 }
        }
        #expect(agreements > 1_000)
    }
}

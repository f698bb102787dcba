import CohortTestSupport
import CohortWire
import Foundation
import Testing

/// Mutations of valid encodings and random frames, for the fuzz test and `Fuzz/`.
enum FrameMutator {
    static func mutate(_ frames: [[UInt8]], _ rng: inout SeededGenerator) -> [[UInt8]] {
        var frames = frames
        let rounds = Int.random(in: 1...3, using: &rng)
        for _ in 0..<rounds {
            switch Int.random(in: 0..<9, using: &rng) {
            case 0, 1:  // bit flips
                if let f = nonEmptyFrame(frames, &rng) {
                    for _ in 0..<Int.random(in: 1...4, using: &rng) {
                        let i = Int.random(in: 0..<frames[f].count, using: &rng)
                        frames[f][i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                    }
                }
            case 2:  // byte replacement
                if let f = nonEmptyFrame(frames, &rng) {
                    frames[f][Int.random(in: 0..<frames[f].count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            case 3:  // truncation
                if !frames.isEmpty {
                    let f = Int.random(in: 0..<frames.count, using: &rng)
                    frames[f] = Array(frames[f].prefix(Int.random(in: 0...frames[f].count, using: &rng)))
                }
            case 4:  // extension with random bytes
                if !frames.isEmpty {
                    let f = Int.random(in: 0..<frames.count, using: &rng)
                    frames[f] += (0..<Int.random(in: 1...16, using: &rng)).map { _ in
                        UInt8.random(in: 0...255, using: &rng)
                    }
                }
            case 5:  // frame duplication
                if !frames.isEmpty {
                    let f = Int.random(in: 0..<frames.count, using: &rng)
                    frames.insert(frames[f], at: Int.random(in: 0...frames.count, using: &rng))
                }
            case 6:  // frame removal
                if !frames.isEmpty { frames.remove(at: Int.random(in: 0..<frames.count, using: &rng)) }
            case 7:  // splice a run of bytes from one place to another
                if let f = nonEmptyFrame(frames, &rng) {
                    let start = Int.random(in: 0..<frames[f].count, using: &rng)
                    let run = frames[f][start..<min(frames[f].count, start + Int.random(in: 1...8, using: &rng))]
                    frames[f].insert(contentsOf: run, at: Int.random(in: 0...frames[f].count, using: &rng))
                }
            default:  // version, family or kind byte
                if !frames.isEmpty, frames[0].count >= 8 {
                    frames[0][Int.random(in: 4...7, using: &rng)] = UInt8.random(in: 0...11, using: &rng)
                }
            }
        }
        return frames
    }

    static func random(_ rng: inout SeededGenerator) -> [[UInt8]] {
        (0..<Int.random(in: 0...4, using: &rng)).map { index in
            var frame = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if index == 0, Bool.random(using: &rng) {  // a valid header, so bodies get exercised
                frame =
                    WireHeader(
                        family: WireFamily.allCases.randomElement(using: &rng)!,
                        kind: UInt8.random(in: 0...11, using: &rng)
                    ).bytes
            }
            return frame
        }
    }

    private static func nonEmptyFrame(_ frames: [[UInt8]], _ rng: inout SeededGenerator) -> Int? {
        let candidates = frames.indices.filter { !frames[$0].isEmpty }
        return candidates.randomElement(using: &rng)
    }
}

@Suite struct FuzzTests {
    /// Every input either decodes or throws a WireError (decode's typed throws
    /// make any other error impossible; a trap would kill the test run), and
    /// whatever decodes is a message that survives its own round trip.
    @Test func aHundredThousandMutatedAndRandomFramesDecodeOrThrowWireError() throws {
        let codec = WireCodec(maxFrameSize: 4096)
        let seeds = try Samples.all.map { try codec.encode($0.1) }
        var rng = SeededGenerator(seed: 0xC0_4027)
        var decoded = 0
        var errors: [String: Int] = [:]
        for round in 0..<100_000 {
            let frames =
                round % 10 == 9
                ? FrameMutator.random(&rng)
                : FrameMutator.mutate(seeds[Int.random(in: 0..<seeds.count, using: &rng)], &rng)
            do {
                let message = try codec.decode(frames: frames)
                decoded += 1
                let again = try codec.decode(frames: codec.encode(message))
                #expect(again == message, "round \(round): \(frames)")
            } catch {
                errors[Self.name(of: error), default: 0] += 1
            }
        }
        // The mutations reach both outcomes and every layer of the decoder.
        #expect(decoded > 1_000)
        for kind in [
            "wrongFrameCount", "truncated", "badMagic", "unsupportedVersion", "unknownFamily", "malformedBody",
            "unknownKind", "malformedHeader",
        ] {
            #expect(errors[kind, default: 0] > 0, "no \(kind) among \(errors)")
        }
    }

    @Test func oversizedFramesAmongMutationsAreRefused() {
        let codec = WireCodec(maxFrameSize: 32)
        var rng = SeededGenerator(seed: 7)
        for _ in 0..<1_000 {
            var frames = FrameMutator.random(&rng)
            frames.append([UInt8](repeating: 1, count: 33))
            #expect(throws: WireError.self) { try codec.decode(frames: frames) }
        }
    }

    static func name(of error: WireError) -> String {
        switch error {
        case .wrongFrameCount: "wrongFrameCount"
        case .frameTooLarge: "frameTooLarge"
        case .truncated: "truncated"
        case .badMagic: "badMagic"
        case .unsupportedVersion: "unsupportedVersion"
        case .malformedHeader: "malformedHeader"
        case .unknownFamily: "unknownFamily"
        case .unknownKind: "unknownKind"
        case .malformedBody: "malformedBody"
        case .encodingFailed: "encodingFailed"
        }
    }
}

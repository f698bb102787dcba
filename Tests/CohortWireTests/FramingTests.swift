import CohortWire
import Foundation
import Testing

@Suite struct FramingTests {
    let codec = WireCodec()

    func frames(_ message: WireMessage = .toWorker(.heartbeat(acknowledged: 0))) throws -> [[UInt8]] {
        try codec.encode(message)
    }

    func decodeError(_ frames: [[UInt8]], codec: WireCodec? = nil) -> WireError? {
        do {
            _ = try (codec ?? self.codec).decode(frames: frames)
            return nil
        } catch {
            return error
        }
    }

    func header(version: UInt16, family: UInt8, kind: UInt8 = 1, length: Int = 8) -> [UInt8] {
        let bytes: [UInt8] = [0x43, 0x48, 0x52, 0x54, UInt8(version >> 8), UInt8(version & 0xFF), family, kind]
        return Array(bytes.prefix(length)) + [UInt8](repeating: 0, count: max(0, length - 8))
    }

    @Test func aWrongMagicIsRefused() throws {
        var frames = try frames()
        frames[0][0] = UInt8(ascii: "X")
        #expect(decodeError(frames) == .badMagic([0x58, 0x48, 0x52, 0x54]))
        #expect(decodeError([Array("GET / HTTP/1.1".utf8), []]) == .badMagic(Array("GET ".utf8)))
    }

    @Test(arguments: [0 as UInt16, 1, 2, 4, 7, 0x0100, 0xFFFF])
    func aWrongVersionIsRecognisedAndReported(version: UInt16) throws {
        let body = try frames(.worker(.heartbeat(sequence: 0)))[1]
        let frames = [header(version: version, family: WireFamily.workerMessage.rawValue), body]
        #expect(decodeError(frames) == .unsupportedVersion(got: version, family: .workerMessage))
        #expect(decodeError(frames)?.code == .unsupportedVersion)
        #expect(throws: WireError.unsupportedVersion(got: version, family: .workerMessage)) {
            try codec.decodeHeader(frames[0])
        }
    }

    @Test func aWrongVersionIsRecognisedWhateverFollowsTheHeader() {
        // A later version may use more header bytes or frames: the version still reads.
        #expect(
            decodeError([header(version: 4, family: 1, length: 12), [], [], []])
                == .unsupportedVersion(got: 4, family: .handshake))
        #expect(decodeError([header(version: 4, family: 200)]) == .unsupportedVersion(got: 4, family: nil))
        #expect(decodeError([header(version: 4, family: 1, length: 6)]) == .unsupportedVersion(got: 4, family: nil))
    }

    @Test(arguments: 0..<8)
    func aTruncatedHeaderIsRefused(length: Int) throws {
        let frames = try frames()
        let truncated = [Array(frames[0].prefix(length)), frames[1]]
        #expect(decodeError(truncated) == .truncated(frame: 0, size: length, needed: 8))
    }

    @Test func aLongerHeaderOfThisVersionIsRefused() throws {
        var frames = try frames()
        frames[0].append(0)
        #expect(
            decodeError(frames) == .malformedHeader("header is 9 bytes; version \(WireVersion.current) headers are 8"))
    }

    /// A heartbeat's body is a protobuf message like any other: fields it does not know are
    /// skipped, and one that cannot be read is refused.
    @Test func aHeartbeatsUnknownFieldsAreSkippedAndAMalformedBodyIsRefused() throws {
        var frames = try frames(.worker(.heartbeat(sequence: 7)))
        #expect(try codec.decode(frames: frames) == .worker(.heartbeat(sequence: 7)))
        frames[1] += [0x48, 0x05]  // field 9, varint 5
        #expect(try codec.decode(frames: frames) == .worker(.heartbeat(sequence: 7)))
        frames[1] = [0xFF, 0x00, 0x13]
        #expect(throws: WireError.self) { try codec.decode(frames: frames) }
    }

    @Test(arguments: [0 as UInt8, 6, 42, 255])
    func anUnknownFamilyIsRefused(family: UInt8) throws {
        var frames = try frames()
        frames[0][6] = family
        #expect(decodeError(frames) == .unknownFamily(family))
    }

    @Test func missingAndExtraFramesAreRefused() throws {
        let frames = try frames()
        #expect(decodeError([]) == .wrongFrameCount(got: 0))
        #expect(decodeError([frames[0]]) == .wrongFrameCount(got: 1))
        #expect(decodeError(frames + [[]]) == .wrongFrameCount(got: 3))
        #expect(decodeError(frames + frames) == .wrongFrameCount(got: 4))
        #expect(decodeError([[], frames[0], frames[1]]) == .truncated(frame: 0, size: 0, needed: 8))
    }

    @Test func anOversizedFrameIsRefusedBeforeAnythingElse() throws {
        let small = WireCodec(maxFrameSize: 64)
        let message = WireMessage.worker(.results([Samples.result, Samples.result]))
        let frames = try codec.encode(message)
        #expect(frames[1].count > 64)
        #expect(decodeError(frames, codec: small) == .frameTooLarge(frame: 1, size: frames[1].count, limit: 64))
        #expect(
            decodeError([[UInt8](repeating: 0, count: 65)], codec: small)
                == .frameTooLarge(frame: 0, size: 65, limit: 64))
        #expect(decodeError(frames, codec: small)?.code == .tooLarge)
        #expect(try codec.decode(frames: frames) == message)
    }

    @Test func theEncoderRefusesAFrameTheReceiverWouldRefuse() throws {
        let small = WireCodec(maxFrameSize: 100)
        let big = WireMessage.toWorker(
            .dispatch([
                AttemptDispatch(
                    ref: Samples.task, kind: "echo", input: Data(repeating: UInt8(ascii: "a"), count: 200))
            ]))
        #expect(throws: WireError.self) { try small.encode(big) }
        do {
            _ = try small.encode(big)
        } catch {
            guard case .frameTooLarge(frame: 1, _, limit: 100) = error else {
                Issue.record("unexpected \(error)")
                return
            }
        }
    }

    @Test func theDefaultLimitIs16MiB() {
        #expect(WireCodec().maxFrameSize == 16 * 1024 * 1024)
    }

    @Test(arguments: WireFamily.allCases)
    func anUnknownKindIsRefused(family: WireFamily) {
        for kind: UInt8 in [0, 15, 42, 255] {
            #expect(
                decodeError([header(version: WireVersion.current, family: family.rawValue, kind: kind), []])
                    == .unknownKind(family, kind: kind))
        }
    }

    @Test func anEmptyBodyIsAMessageOfDefaults() throws {
        // Every field at its default: valid where the defaults are (proto3 sends nothing for them).
        #expect(
            try codec.decode(frames: [
                header(version: WireVersion.current, family: WireFamily.workerMessage.rawValue, kind: 6), [],
            ])
                == .worker(.lockRelease(requestID: 0)))
        // Enum 0 is never valid.
        guard
            case .malformedBody(.clientRequest, _) = decodeError([
                header(version: WireVersion.current, family: WireFamily.clientRequest.rawValue, kind: 1), [],
            ])
        else {
            Issue.record("a submit without a format decoded")
            return
        }
    }

    @Test func invalidProtobufIsAMalformedBody() throws {
        // Field 1, length-delimited, claims 100 bytes but has 1.
        let error = decodeError([
            header(version: WireVersion.current, family: WireFamily.workerMessage.rawValue, kind: 4), [0x0A, 100, 0],
        ])
        guard case .malformedBody(.workerMessage, _) = error else {
            Issue.record("expected malformedBody, got \(String(describing: error))")
            return
        }
    }

    @Test func invalidUTF8InAStringIsAMalformedBody() throws {
        var frames = try frames(.worker(.draining(reason: "abc")))
        let index = try #require(frames[1].firstIndex(of: UInt8(ascii: "a")))
        frames[1][index] = 0xFF
        guard case .malformedBody(.workerMessage, _) = decodeError(frames) else {
            Issue.record("expected malformedBody")
            return
        }
    }

    @Test func anEnumValueThisVersionDoesNotKnowIsAMalformedBody() throws {
        var frames = try frames(
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 1,
                    .groups([
                        GroupSummary(id: "g", name: "n", state: .cancelled, submittedAt: Samples.t1)
                    ]))))
        // GroupSummary.state (field 3, varint) = 5 (cancelled): make it 99.
        let index = try #require(frames[1].indices.first { frames[1][$0] == 0x18 && frames[1][$0 + 1] == 5 })
        frames[1][index + 1] = 99
        #expect(decodeError(frames) == .malformedBody(.coordinatorReply, reason: "group state 99 is unknown"))
    }

    @Test func aResultWithoutOutcomeIsAMalformedBody() throws {
        // TaskResults (family 4, kind 4) holding one empty AttemptResult.
        let body: [UInt8] = [0x0A, 0x00]
        #expect(
            decodeError([
                header(version: WireVersion.current, family: WireFamily.workerMessage.rawValue, kind: 4), body,
            ])
                == .malformedBody(.workerMessage, reason: "results[0] has no outcome"))
    }

    @Test func aCancelledResultOrCancelWithoutItsCodeIsAMalformedBody() throws {
        // AttemptResults (family 4, kind 4) holding one AttemptResult cancelled "x" (field 7) and no code.
        let result: [UInt8] = [0x0A, 0x03, 0x3A, 0x01, 0x78]
        #expect(
            decodeError([
                header(version: WireVersion.current, family: WireFamily.workerMessage.rawValue, kind: 4), result,
            ])
                == .malformedBody(.workerMessage, reason: "cancel code 0 is unknown"))
        // CancelAttempts (family 5, kind 3) holding one AttemptCancellation with reason "x" (field 5) and no code.
        let cancel: [UInt8] = [0x0A, 0x03, 0x2A, 0x01, 0x78]
        #expect(
            decodeError([
                header(version: WireVersion.current, family: WireFamily.coordinatorToWorker.rawValue, kind: 3), cancel,
            ])
                == .malformedBody(.coordinatorToWorker, reason: "cancel code 0 is unknown"))
    }

    @Test func everyCancelCodeSurvivesEncodeAndDecode() throws {
        let ref = WireAttemptRef(id: 7, group: "g", path: "a", attempt: 1)
        for code in CancelCode.allCases {
            let cancel = WireMessage.toWorker(.cancel([AttemptCancellation(ref: ref, reason: "why", code: code)]))
            #expect(try codec.decode(frames: codec.encode(cancel)) == cancel)
            let stamp = WireTimestamp(nanosecondsSinceEpoch: 1)
            let result = WireMessage.worker(
                .results([
                    AttemptResult(
                        ref: ref, outcome: .cancelled(reason: "why", code: code), startedAt: stamp, finishedAt: stamp)
                ]))
            #expect(try codec.decode(frames: codec.encode(result)) == result)
        }
    }

    @Test func aLockRequestWithoutTaskIsAMalformedBody() throws {
        // LockRequest (family 4, kind 5) with request id 1 and no task.
        #expect(
            decodeError([
                header(version: WireVersion.current, family: WireFamily.workerMessage.rawValue, kind: 5), [0x08, 0x01],
            ])
                == .malformedBody(.workerMessage, reason: "lock request has no attempt"))
    }

    @Test func helloMustRepeatItsHeadersVersion() throws {
        var hello = Hello(role: .worker, softwareVersion: "1", peerName: "w")
        hello.protocolVersion = 4
        let frames = try codec.encode(.handshake(.hello(hello)))
        // The peer speaks the body's version: a version mismatch, not a malformed body.
        #expect(decodeError(frames) == .unsupportedVersion(got: 4, family: .handshake))
    }

    @Test func errorsReadWellAndMapToCodes() {
        #expect(
            WireError.unsupportedVersion(got: 4, family: .handshake).description
                == "protocol version 4 is not supported; this build speaks 3")
        #expect(WireError.wrongFrameCount(got: 3).description == "expected 2 frames (header, body), got 3")
        #expect(WireError.badMagic([0x47, 0x45]).code == .badFrame)
        #expect(
            WireError.frameTooLarge(frame: 1, size: 10, limit: 5).description
                == "frame 1 is 10 bytes, over the limit of 5")
    }

    @Test func errorCodesMapToTheCLIsExitCodes() {
        #expect(ProtocolError.Code.invalidSpec.exitCode == 65)
        #expect(ProtocolError.Code.notFound.exitCode == 64)
        #expect(ProtocolError.Code.shuttingDown.exitCode == 69)
        #expect(ProtocolError.Code.unsupportedVersion.exitCode == 69)
    }
}

import CohortWire
import Foundation
import Testing

@Suite struct RoundTripTests {
    let codec = WireCodec()

    @Test(arguments: Samples.all)
    func everyMessageKindSurvivesEncodeAndDecode(name: String, message: WireMessage) throws {
        let frames = try codec.encode(message)
        #expect(frames.count == 2)
        #expect(frames[0] == message.header.bytes)
        #expect(try codec.decode(frames: frames) == message, "\(name)")
        #expect(try codec.decode(frames: frames.map { Data($0) }) == message, "\(name) from Data")
    }

    @Test func samplesCoverEveryMessageKind() {
        let covered = Set(Samples.all.map { Samples.kind(of: $0.1) })
        #expect(covered.count == Samples.kindCount)
    }

    @Test(arguments: WireFamily.allCases)
    func headerCarriesMagicVersionFamilyAndKind(family: WireFamily) throws {
        let header = WireHeader(family: family, kind: 9).bytes
        #expect(header == [0x43, 0x48, 0x52, 0x54, 0x00, UInt8(WireVersion.current), family.rawValue, 9])
        #expect(try codec.decodeHeader(header) == WireHeader(version: WireVersion.current, family: family, kind: 9))
    }

    /// The family and kind bytes of every message kind, as docs/protocol.md lists them.
    static let kindTable: [String: (WireFamily, UInt8)] = [
        "hello": (.handshake, 1), "welcome": (.handshake, 2), "handshake error": (.handshake, 3),
        "submit": (.clientRequest, 1), "status": (.clientRequest, 2), "result": (.clientRequest, 3),
        "cancel": (.clientRequest, 4), "watch": (.clientRequest, 5), "unwatch": (.clientRequest, 6),
        "workers": (.clientRequest, 7), "locks": (.clientRequest, 8), "disconnect": (.clientRequest, 9),
        "drain": (.clientRequest, 10), "undrain": (.clientRequest, 11), "add children": (.clientRequest, 12),
        "logs": (.clientRequest, 13), "rerun": (.clientRequest, 14),
        "submitted": (.coordinatorReply, 1), "groups": (.coordinatorReply, 2), "group": (.coordinatorReply, 3),
        "result reply": (.coordinatorReply, 4), "cancel accepted": (.coordinatorReply, 5),
        "watch events": (.coordinatorReply, 6), "workers reply": (.coordinatorReply, 7),
        "locks reply": (.coordinatorReply, 8), "error": (.coordinatorReply, 9), "acknowledged": (.coordinatorReply, 10),
        "children added": (.coordinatorReply, 11), "logs reply": (.coordinatorReply, 12),
        "ready": (.workerMessage, 1), "worker heartbeat": (.workerMessage, 2), "started": (.workerMessage, 3),
        "results": (.workerMessage, 4), "lock request": (.workerMessage, 5), "lock release": (.workerMessage, 6),
        "lock withdraw": (.workerMessage, 7), "draining": (.workerMessage, 8), "worker disconnect": (.workerMessage, 9),
        "group cancel by attempt": (.workerMessage, 10), "children added by attempt": (.workerMessage, 11),
        "log lines": (.workerMessage, 12),
        "coordinator heartbeat": (.coordinatorToWorker, 1), "dispatch": (.coordinatorToWorker, 2),
        "cancel attempts": (.coordinatorToWorker, 3), "lock grant": (.coordinatorToWorker, 4),
        "lock denied": (.coordinatorToWorker, 5), "shutdown": (.coordinatorToWorker, 6),
        "worker error": (.coordinatorToWorker, 7), "log stored": (.coordinatorToWorker, 8),
    ]

    @Test func everyKindIsSentWithItsDocumentedKindByte() throws {
        #expect(Self.kindTable.count == Samples.kindCount)
        for (name, message) in Samples.all {
            let kind = Samples.kind(of: message)
            let expected = try #require(Self.kindTable[kind], "\(kind) missing from the table")
            let frames = try codec.encode(message)
            #expect(frames[0][6] == expected.0.rawValue && frames[0][7] == expected.1, "\(name)")
        }
    }

    /// docs/protocol.md §4.3 is what a client written from the docs alone goes by: its tables
    /// list exactly the kinds the codec sends, each with a body `cohort.proto` defines.
    @Test func theProtocolDocumentsKindTablesListEveryKind() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let document = try String(contentsOf: root.appending(path: "docs/protocol.md"), encoding: .utf8)
        let proto = try String(
            contentsOf: root.appending(path: "Sources/CohortWire/Schema/cohort.proto"), encoding: .utf8)
        let section = try #require(
            document.firstRange(of: "### 4.3 Kinds and bodies").map { document[$0.upperBound...] })
        let tables = section[..<(try #require(section.firstRange(of: "### 4.4")).lowerBound)]
        var family: UInt8?
        var documented: Set<[UInt8]> = []
        for line in tables.split(separator: "\n") {
            if line.hasPrefix("**Family "), let number = line.dropFirst(9).split(separator: ",").first {
                family = UInt8(number)
                continue
            }
            guard let family, line.hasPrefix("|") else { continue }
            // A row holds one or two `| kind | body |` pairs (the reply table has two columns).
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            for index in cells.indices.dropLast() {
                guard let kind = UInt8(cells[index]), cells[index + 1].hasPrefix("`") else { continue }
                let body = cells[index + 1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
                #expect(proto.contains("message \(body) {"), "family \(family) kind \(kind): no message \(body)")
                #expect(documented.insert([family, kind]).inserted, "family \(family) kind \(kind) listed twice")
            }
        }
        let sent = Set(Self.kindTable.values.map { [$0.0.rawValue, $0.1] })
        #expect(documented.subtracting(sent).isEmpty, "documented but not sent: \(documented.subtracting(sent))")
        #expect(sent.subtracting(documented).isEmpty, "sent but not documented: \(sent.subtracting(documented))")
    }

    @Test func heartbeatsHaveEmptyBodies() throws {
        #expect(try codec.encode(.worker(.heartbeat(sequence: 0)))[1].isEmpty)
        #expect(try codec.encode(.toWorker(.heartbeat(acknowledged: 0)))[1].isEmpty)
    }

    @Test func familyEncodersAgreeWithTheGeneralOne() throws {
        let request = ClientRequest(requestID: 5, .watch(group: "g"))
        #expect(try codec.encode(request) == codec.encode(.clientRequest(request)))
        let reply = CoordinatorReply(requestID: 5, .acknowledged)
        #expect(try codec.encode(reply) == codec.encode(.coordinatorReply(reply)))
        let worker = WorkerMessage.lockRelease(requestID: 3)
        #expect(try codec.encode(worker) == codec.encode(.worker(worker)))
        let command = CoordinatorToWorker.heartbeat(acknowledged: 0)
        #expect(try codec.encode(command) == codec.encode(.toWorker(command)))
        let hello = Handshake.hello(Hello(role: .client, softwareVersion: "1", peerName: "p"))
        #expect(try codec.encode(hello) == codec.encode(.handshake(hello)))
    }

    @Test func decodingInPlaceAgreesWithDecodingArrays() throws {
        for (name, message) in Samples.all {
            let frames = try codec.encode(message)
            let decoded = try frames[0].withUnsafeBytes { header in
                try frames[1].withUnsafeBytes { body in
                    try codec.decode(frames: [header, body])
                }
            }
            #expect(decoded == message, "\(name)")
        }
    }

    @Test func absentTimestampsAndTimeoutsStayAbsent() throws {
        let child = ChildStatus(name: "a", path: "a", state: .pending)
        let message = WireMessage.coordinatorReply(
            CoordinatorReply(
                requestID: 1,
                .watchEvents([
                    WatchEvent(group: "g", at: Samples.t1, .child(child))
                ])))
        guard case .coordinatorReply(let reply) = try codec.decode(frames: codec.encode(message)),
            case .watchEvents(let events) = reply.kind, case .child(let decoded) = events.first?.kind
        else {
            Issue.record("wrong message")
            return
        }
        #expect(decoded.startedAt == nil && decoded.finishedAt == nil && decoded.worker == nil && decoded.error == nil)

        let task = AttemptDispatch(ref: Samples.task, kind: "echo", input: Data("{}".utf8), timeout: nil)
        guard
            case .toWorker(.dispatch(let tasks)) = try codec.decode(frames: codec.encode(.toWorker(.dispatch([task]))))
        else {
            Issue.record("wrong message")
            return
        }
        #expect(tasks.first?.timeout == nil)
    }

    @Test func aSubMillisecondTimeoutIsNotLostAsNone() throws {
        let task = AttemptDispatch(ref: Samples.task, kind: "sleep", input: Data("{}".utf8), timeout: .microseconds(10))
        guard
            case .toWorker(.dispatch(let tasks)) = try codec.decode(frames: codec.encode(.toWorker(.dispatch([task]))))
        else {
            Issue.record("wrong message")
            return
        }
        #expect(tasks.first?.timeout == .milliseconds(1))
    }

    @Test func timestampsConvertToDates() {
        let date = Date(timeIntervalSince1970: 1_767_225_600.5)
        let stamp = WireTimestamp(date)
        #expect(stamp.nanosecondsSinceEpoch == 1_767_225_600_500_000_000)
        #expect(stamp.date == date)
    }
}

import CohortWire
import Foundation
import Testing

@Suite struct RoundTripTests {
    let codec = WireCodec()

    @Test(arguments: Samples.all)
    func everyMessageKindSurvivesEncodeAndDecode(name: String, message: WireMessage) throws {
        let frames = try codec.encode(message)
        #expect(frames.count == 2)
        #expect(frames[0] == WireHeader(family: message.family).bytes)
        #expect(try codec.decode(frames: frames) == message, "\(name)")
        #expect(try codec.decode(frames: frames.map { Data($0) }) == message, "\(name) from Data")
    }

    @Test func samplesCoverEveryMessageKind() {
        let covered = Set(Samples.all.map { Samples.kind(of: $0.1) })
        #expect(covered.count == Samples.kindCount)
    }

    @Test(arguments: WireFamily.allCases)
    func headerCarriesMagicVersionAndFamily(family: WireFamily) throws {
        let header = WireHeader(family: family).bytes
        #expect(header == [0x43, 0x48, 0x52, 0x54, 0x00, UInt8(WireVersion.current), family.rawValue, 0x00])
        #expect(try codec.decodeHeader(header) == WireHeader(version: WireVersion.current, family: family))
    }

    @Test func familyEncodersAgreeWithTheGeneralOne() throws {
        let request = ClientRequest(requestID: 5, .watch(group: "g"))
        #expect(try codec.encode(request) == codec.encode(.clientRequest(request)))
        let reply = CoordinatorReply(requestID: 5, .acknowledged)
        #expect(try codec.encode(reply) == codec.encode(.coordinatorReply(reply)))
        let worker = WorkerMessage.lockRelease(requestID: 3)
        #expect(try codec.encode(worker) == codec.encode(.worker(worker)))
        let command = CoordinatorToWorker.heartbeat
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
        let message = WireMessage.coordinatorReply(CoordinatorReply(requestID: 1, .watchEvents([
            WatchEvent(group: "g", at: Samples.t1, .child(child))])))
        guard case .coordinatorReply(let reply) = try codec.decode(frames: codec.encode(message)),
              case .watchEvents(let events) = reply.kind, case .child(let decoded) = events.first?.kind
        else { Issue.record("wrong message"); return }
        #expect(decoded.startedAt == nil && decoded.finishedAt == nil && decoded.worker == nil && decoded.error == nil)

        let task = DispatchTask(task: Samples.task, kind: "echo", input: Data("{}".utf8), timeout: nil)
        guard case .toWorker(.dispatch(let tasks)) = try codec.decode(frames: codec.encode(.toWorker(.dispatch([task]))))
        else { Issue.record("wrong message"); return }
        #expect(tasks.first?.timeout == nil)
    }

    @Test func aSubMillisecondTimeoutIsNotLostAsNone() throws {
        let task = DispatchTask(task: Samples.task, kind: "sleep", input: Data("{}".utf8), timeout: .microseconds(10))
        guard case .toWorker(.dispatch(let tasks)) = try codec.decode(frames: codec.encode(.toWorker(.dispatch([task]))))
        else { Issue.record("wrong message"); return }
        #expect(tasks.first?.timeout == .milliseconds(1))
    }

    @Test func timestampsConvertToDates() {
        let date = Date(timeIntervalSince1970: 1_767_225_600.5)
        let stamp = WireTimestamp(date)
        #expect(stamp.nanosecondsSinceEpoch == 1_767_225_600_500_000_000)
        #expect(stamp.date == date)
    }
}

// libFuzzer target for CohortWire's decoder; built and run by scripts/fuzz-wire.
//
// The input is split into frames: byte 0 is the frame count (mod 5), then each
// frame is a 2-byte little-endian length and that many bytes (the last frame
// takes what is left). Every input must decode to a message that survives its
// own round trip, or throw a WireError; the three decode entry points must agree.
// A trap (crash, failed precondition) is a finding.
import CohortWire
import Foundation

/// Splits fuzzer input into frames (see above).
func frames(_ data: UnsafeRawBufferPointer) -> [[UInt8]] {
    guard let first = data.first else { return [] }
    let count = Int(first) % 5
    var frames: [[UInt8]] = []
    var offset = 1
    for index in 0..<count {
        if index == count - 1 {
            frames.append(Array(data[min(offset, data.count)...]))
            break
        }
        guard offset + 2 <= data.count else {
            frames.append([])
            continue
        }
        let length = Int(data[offset]) | Int(data[offset + 1]) << 8
        offset += 2
        let end = min(data.count, offset + length)
        frames.append(Array(data[offset..<end]))
        offset = end
    }
    return frames
}

/// The fuzzer input that splits into `frames`.
func input(_ frames: [[UInt8]]) -> [UInt8] {
    var bytes: [UInt8] = [UInt8(frames.count)]
    for (index, frame) in frames.enumerated() {
        if index < frames.count - 1 {
            bytes += [UInt8(frame.count & 0xFF), UInt8(frame.count >> 8)]
        }
        bytes += frame
    }
    return bytes
}

let codec = WireCodec(maxFrameSize: 1 << 16)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let frames = frames(UnsafeRawBufferPointer(start: data, count: size))
    let fromArrays = Result { () throws(WireError) in try codec.decode(frames: frames) }
    let fromData = Result { () throws(WireError) in try codec.decode(frames: frames.map { Data($0) }) }
    precondition(fromArrays == fromData, "decode(frames: [Data]) disagrees: \(fromArrays) vs \(fromData)")
    if case .success(let message) = fromArrays {
        do {
            let again = try codec.decode(frames: codec.encode(message))
            precondition(again == message, "round trip changed \(message) into \(again)")
        } catch {
            preconditionFailure("a decoded message does not re-encode: \(message): \(error)")
        }
    }
    return 0
}

/// Writes valid encodings of a few messages into $FUZZ_WIRE_SEEDS (a corpus
/// directory) so the fuzzer starts from real messages.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzWireInitialize(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    guard let directory = ProcessInfo.processInfo.environment["FUZZ_WIRE_SEEDS"] else { return 0 }
    let task = WireAttemptRef(id: 42, group: "g-1", path: "tests/unit", attempt: 2)
    let json = Data(#"{"a":[1,2]}"#.utf8)
    let child = ChildStatus(
        name: "unit", path: "tests/unit", state: .running, worker: "w-1", attempt: 1,
        startedAt: WireTimestamp(nanosecondsSinceEpoch: 5))
    let seeds: [WireMessage] = [
        .handshake(.hello(Hello(role: .worker, softwareVersion: "0.1", peerName: "w"))),
        .handshake(.welcome(Welcome(coordinatorID: "c", epoch: 3, peerID: "w-1", softwareVersion: "0.1"))),
        .handshake(.error(.unsupportedVersion(2))),
        .clientRequest(
            ClientRequest(
                requestID: 1,
                .submit(Submission(groupID: "g", document: "name: x", format: .yaml, sourceName: "x.yaml")))),
        .clientRequest(ClientRequest(requestID: 2, .cancel(group: "g", path: "a/b", reason: "r"))),
        .coordinatorReply(
            CoordinatorReply(
                requestID: 3,
                .group(
                    GroupDetail(
                        id: "g", name: "n", state: .running, submittedAt: WireTimestamp(nanosecondsSinceEpoch: 1),
                        children: [child])))),
        .coordinatorReply(
            CoordinatorReply(
                requestID: 4,
                .watchEvents([WatchEvent(group: "g", at: WireTimestamp(nanosecondsSinceEpoch: 2), .child(child))]))),
        .coordinatorReply(
            CoordinatorReply(
                requestID: 5,
                .error(
                    ProtocolError(code: .invalidSpec, message: "m", specErrors: [SpecError(path: "p", message: "m")])))),
        .coordinatorReply(
            CoordinatorReply(
                requestID: 6,
                .locks([
                    LockInfo(
                        category: "repo", token: 4, holder: LockHolder(group: "g", child: "c", attempt: 1, worker: "w"),
                        waiters: [LockWaiter(group: "g", child: "d")])
                ]))),
        .worker(
            .ready(
                WorkerReady(
                    name: "w", host: "h", sessionID: "s", labels: ["linux"], slots: 2, kinds: ["echo"],
                    running: [RunningAttempt(task: task, startedAt: nil, heldTokens: ["repo": 3])]))),
        .worker(
            .results([
                AttemptResult(
                    task: task, outcome: .succeeded(output: json), startedAt: WireTimestamp(nanosecondsSinceEpoch: 1),
                    finishedAt: WireTimestamp(nanosecondsSinceEpoch: 2)),
                AttemptResult(
                    task: task, outcome: .failed(error: "e"), startedAt: WireTimestamp(nanosecondsSinceEpoch: 1),
                    finishedAt: WireTimestamp(nanosecondsSinceEpoch: 2)),
            ])),
        .worker(.lockRequest(LockRequest(requestID: 7, task: task, categories: ["repo", "db"]))),
        .toWorker(
            .dispatch([
                AttemptDispatch(
                    task: task, kind: "shell", input: json, fencingTokens: ["repo": 9], timeout: .seconds(5),
                    env: ["A": "1"])
            ])),
        .toWorker(.cancel([AttemptCancellation(task: task, reason: "timed out")])),
        .toWorker(.error(WorkerError(code: .superseded, message: "m", task: task, requestID: 7))),
    ]
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    for (index, message) in seeds.enumerated() {
        guard let frames = try? codec.encode(message) else { continue }
        FileManager.default.createFile(atPath: "\(directory)/seed-\(index)", contents: Data(input(frames)))
    }
    return 0
}

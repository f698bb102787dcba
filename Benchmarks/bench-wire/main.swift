// bench-wire: encode + decode rate of the hot messages (dispatch, results), single and in batches
// of 64, against a baseline measured in the same run: the same content through Foundation's
// JSONEncoder/JSONDecoder (what a Codable protocol would cost). Rates are per second of the
// thread's CPU time, so that builds running beside it on a shared machine do not skew them;
// the wall-clock rate of the run is printed too.
//
// Usage: bench-wire [--json] [--seconds S]   (build with -c release)
import CohortWire
import Foundation

struct Options {
    var json = false
    var seconds = 1.0

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--json": json = true
            case "--seconds": seconds = iterator.next().flatMap(Double.init) ?? seconds
            default:
                FileHandle.standardError.write(Data("usage: bench-wire [--json] [--seconds S]\n".utf8))
                exit(64)
            }
        }
    }
}

// MARK: Workload

let input = Data(#"{"command":["sh","-c","true"],"env":{"A":"1"}}"#.utf8)
let output = Data(#"{"exitCode":0,"stdout":"ok\n","stderr":""}"#.utf8)
let start = WireTimestamp(nanosecondsSinceEpoch: 1_767_225_600_000_000_000)

func ref(_ i: Int) -> WireAttemptRef {
    WireAttemptRef(id: UInt64(1_000 + i), group: "g-01HZX3", path: "build/unit-\(i % 10)", attempt: 1)
}

func dispatch(_ count: Int) -> CoordinatorToWorker {
    .dispatch(
        (0..<count).map {
            AttemptDispatch(ref: ref($0), kind: "shell", input: input, fencingTokens: [:], timeout: .seconds(300))
        })
}

func results(_ count: Int) -> WorkerMessage {
    .results(
        (0..<count).map {
            AttemptResult(
                ref: ref($0), outcome: .succeeded(output: output), startedAt: start,
                finishedAt: WireTimestamp(nanosecondsSinceEpoch: start.nanosecondsSinceEpoch + 1_000_000))
        })
}

// MARK: Baseline: the same content through Codable JSON

struct JSONAttemptRef: Codable {
    var id: UInt64
    var group: String
    var path: String
    var attempt: UInt32
}
struct JSONAttempt: Codable {
    var task: JSONAttemptRef
    var kind: String
    var input: Data
    var fencingTokens: [String: UInt64]
    var timeoutMs: UInt64
}
struct JSONResult: Codable {
    var task: JSONAttemptRef
    var output: Data
    var startedAt: Int64
    var finishedAt: Int64
}
struct JSONDispatch: Codable { var tasks: [JSONAttempt] }
struct JSONResults: Codable { var results: [JSONResult] }

func jsonRef(_ r: WireAttemptRef) -> JSONAttemptRef {
    JSONAttemptRef(id: r.id, group: r.group, path: r.path, attempt: r.attempt)
}

// MARK: Measurement

/// CPU time this thread has used, in seconds: unlike wall time, it does not
/// count the time other processes on a shared machine take the core away.
func threadCPUTime() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Rates of one encode + decode (`body`), in messages per second.
struct Rate {
    /// Per second of this thread's CPU time: what the code costs.
    var cpu: Double
    /// Per second of wall time: what this run saw, with whatever else ran on the machine.
    var wall: Double
}

/// Runs `body` repeatedly for about `seconds` in 10 rounds and keeps each clock's best round.
func measure(seconds: Double, _ body: () throws -> Int) rethrows -> Rate {
    var sink = 0
    for _ in 0..<1_000 { sink &+= try body() }  // warm up
    var best = Rate(cpu: 0, wall: 0)
    let clock = ContinuousClock()
    for _ in 0..<10 {
        var iterations = 0
        let began = clock.now
        let cpuBegan = threadCPUTime()
        let deadline = began + .milliseconds(Int64(seconds * 100))
        while clock.now < deadline {
            for _ in 0..<128 { sink &+= try body() }
            iterations += 128
        }
        let (s, atto) = (clock.now - began).components
        let wall = Double(s) + Double(atto) / 1e18
        let cpu = threadCPUTime() - cpuBegan
        best.wall = max(best.wall, Double(iterations) / wall)
        best.cpu = max(best.cpu, Double(iterations) / max(cpu, 1e-9))
    }
    if sink == 42 { print("") }  // keep the work observable
    return best
}

struct Row: Codable {
    var name: String
    var itemsPerMessage: Int
    var frameBytes: Int
    /// Encode + decode of whole messages per CPU-second.
    var messagesPerSecond: Double
    /// Items (tasks, results) per CPU-second.
    var itemsPerSecond: Double
    var nanosecondsPerItem: Double
    /// Items per wall-clock second in this run (lower when the machine is shared).
    var wallItemsPerSecond: Double
    var baselineItemsPerSecond: Double
    var ratioToBaseline: Double
    var meetsTarget: Bool
}

let options = Options(CommandLine.arguments)
let codec = WireCodec()
let jsonEncoder = JSONEncoder()
let jsonDecoder = JSONDecoder()
let target = 1_000_000.0
var rows: [Row] = []

@MainActor func run(_ name: String, items: Int, message: WireMessage, baseline: () throws -> Int) throws {
    let frames = try codec.encode(message)
    let rate = try measure(seconds: options.seconds) {
        let frames = try codec.encode(message)
        switch try codec.decode(frames: frames) {
        case .toWorker(.dispatch(let tasks)): return tasks.count &+ Int(truncatingIfNeeded: tasks[0].ref.id)
        case .worker(.results(let results)): return results.count &+ Int(truncatingIfNeeded: results[0].ref.id)
        default: return 0
        }
    }
    let baselineRate = try measure(seconds: options.seconds, baseline)
    let itemRate = rate.cpu * Double(items)
    rows.append(
        Row(
            name: name, itemsPerMessage: items, frameBytes: frames[0].count + frames[1].count,
            messagesPerSecond: rate.cpu, itemsPerSecond: itemRate, nanosecondsPerItem: 1e9 / itemRate,
            wallItemsPerSecond: rate.wall * Double(items),
            baselineItemsPerSecond: baselineRate.cpu * Double(items),
            ratioToBaseline: rate.cpu / baselineRate.cpu,
            // A single message must itself reach the target; a batch must reach it in items.
            meetsTarget: (items == 1 ? rate.cpu : itemRate) >= target))
}

for count in [1, 64] {
    let message = dispatch(count)
    guard case .dispatch(let tasks) = message else { fatalError() }
    let json = JSONDispatch(
        tasks: tasks.map {
            JSONAttempt(
                task: jsonRef($0.ref), kind: $0.kind, input: $0.input, fencingTokens: $0.fencingTokens,
                timeoutMs: 300_000)
        })
    try run("dispatch ×\(count)", items: count, message: .toWorker(message)) {
        let decoded = try jsonDecoder.decode(JSONDispatch.self, from: jsonEncoder.encode(json))
        return decoded.tasks.count
    }
}
for count in [1, 64] {
    let message = results(count)
    guard case .results(let list) = message else { fatalError() }
    let json = JSONResults(
        results: list.map {
            JSONResult(
                task: jsonRef($0.ref), output: output, startedAt: $0.startedAt.nanosecondsSinceEpoch,
                finishedAt: $0.finishedAt.nanosecondsSinceEpoch)
        })
    try run("results ×\(count)", items: count, message: .worker(message)) {
        let decoded = try jsonDecoder.decode(JSONResults.self, from: jsonEncoder.encode(json))
        return decoded.results.count
    }
}

if options.json {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let report: [String: AnyEncodable] = [
        "benchmark": AnyEncodable("bench-wire"),
        "protocolVersion": AnyEncodable(Int(WireVersion.current)),
        "targetPerSecond": AnyEncodable(target),
        "baseline": AnyEncodable("Foundation JSONEncoder+JSONDecoder of the same content"),
        "rows": AnyEncodable(rows),
    ]
    print(String(decoding: try encoder.encode(report), as: UTF8.self))
} else {
    func f(_ value: Double) -> String {
        value >= 1e6 ? String(format: "%.2fM", value / 1e6) : String(format: "%.0fk", value / 1e3)
    }
    func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : String(repeating: " ", count: n - s.count) + s }
    print(
        "bench-wire: encode + decode per CPU-second, protocol version \(WireVersion.current); baseline = Codable JSON, same run"
    )
    print(
        "case".padding(toLength: 14, withPad: " ", startingAt: 0)
            + pad("bytes", 7) + pad("msgs/s", 10) + pad("items/s", 10) + pad("ns/item", 9) + pad("wall items/s", 14)
            + pad("JSON items/s", 14) + pad("× JSON", 8) + "  target ≥ 1M/s")
    for row in rows {
        print(
            row.name.padding(toLength: 14, withPad: " ", startingAt: 0)
                + pad("\(row.frameBytes)", 7) + pad(f(row.messagesPerSecond), 10) + pad(f(row.itemsPerSecond), 10)
                + pad(String(format: "%.0f", row.nanosecondsPerItem), 9) + pad(f(row.wallItemsPerSecond), 14)
                + pad(f(row.baselineItemsPerSecond), 14) + pad(String(format: "%.1f", row.ratioToBaseline), 8)
                + (row.meetsTarget ? "  ok" : "  BELOW"))
    }
}

struct AnyEncodable: Encodable {
    let encode: (any Encoder) throws -> Void
    init(_ value: some Encodable) { encode = value.encode(to:) }
    func encode(to encoder: any Encoder) throws { try encode(encoder) }
}

// Local engine benchmarks: ProcedureQueue against Foundation's OperationQueue, same run.
//
//   swift run -c release bench-procedures [--count N] [--json]
//
// Prints procedures per second for each case and the ratio to OperationQueue.
import Dispatch
import Foundation
import Procedures

struct Options {
    var count = 1_000_000
    var json = false
    /// Runs only the ProcedureQueue no-op case, for a profiler.
    var profile = false

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--count": count = Int(iterator.next() ?? "") ?? count
            case "--json": json = true
            case "--profile": profile = true
            case "--help", "-h":
                print("usage: bench-procedures [--count N] [--json] [--profile]")
                exit(0)
            default:
                FileHandle.standardError.write(Data("bench-procedures: unknown argument \(argument)\n".utf8))
                exit(64)
            }
        }
    }
}

func measure(_ body: () async -> Void) async -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    await body()
    let elapsed = clock.now - start
    let (seconds, attoseconds) = elapsed.components
    return Double(seconds) + Double(attoseconds) / 1e18
}

func operationQueueNoOps(_ count: Int) -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    let queue = OperationQueue()
    for _ in 0..<count { queue.addOperation(BlockOperation {}) }
    queue.waitUntilAllOperationsAreFinished()
    let (seconds, attoseconds) = (clock.now - start).components
    return Double(seconds) + Double(attoseconds) / 1e18
}

func procedureQueueNoOps(_ count: Int) async -> Double {
    await measure {
        let queue = ProcedureQueue()
        for _ in 0..<count { queue.add(BlockProcedure {}) }
        await queue.waitUntilAllFinished()
    }
}

func groupWithChildren(_ count: Int) async -> Double {
    await measure {
        let queue = ProcedureQueue()
        let group = GroupProcedure(children: (0..<count).map { _ in BlockProcedure {} })
        queue.add(group)
        await group.waitUntilFinished()
    }
}

func exclusiveOnOneCategory(_ count: Int) async -> Double {
    await measure {
        let queue = ProcedureQueue()
        queue.exclusivityManager = LocalExclusivityManager()
        for _ in 0..<count {
            let procedure = BlockProcedure {}
            procedure.addCondition(MutuallyExclusive(category: "bench"))
            queue.add(procedure)
        }
        await queue.waitUntilAllFinished()
    }
}

let options = Options(CommandLine.arguments)
let n = options.count
if options.profile {
    let seconds = await procedureQueueNoOps(n)
    print("ProcedureQueue no-op: \(Int(Double(n) / seconds)) per second")
    exit(0)
}
// Warm up both engines so neither pays first-use costs in the timed runs.
_ = operationQueueNoOps(10_000)
_ = await procedureQueueNoOps(10_000)

let baseline = operationQueueNoOps(n)
let noOps = await procedureQueueNoOps(n)
let groupCount = 10_000
let group = await groupWithChildren(groupCount)
let exclusiveCount = 10_000
let exclusive = await exclusiveOnOneCategory(exclusiveCount)

let rows: [(String, Int, Double)] = [
    ("OperationQueue no-op (baseline)", n, baseline),
    ("ProcedureQueue no-op", n, noOps),
    ("GroupProcedure with children", groupCount, group),
    ("exclusive, one category", exclusiveCount, exclusive),
]
let baselineRate = Double(n) / baseline
if options.json {
    var object: [String: Any] = [:]
    for (name, count, seconds) in rows {
        object[name] = [
            "count": count, "seconds": seconds, "perSecond": Double(count) / seconds,
            "ratioToOperationQueue": (Double(count) / seconds) / baselineRate,
        ]
    }
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    print(String(decoding: data, as: UTF8.self))
} else {
    print("case".padding(toLength: 34, withPad: " ", startingAt: 0) + "      count      per second   × OperationQueue")
    for (name, count, seconds) in rows {
        let rate = Double(count) / seconds
        print(
            name.padding(toLength: 34, withPad: " ", startingAt: 0)
                + String(format: "%11d %15.0f %12.2f×", count, rate, rate / baselineRate))
    }
}

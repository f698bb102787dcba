// cohort-simulate: runs CohortSimulation (docs/simulation.md).
//
//   cohort-simulate --seed S --steps N     one seed (replays a failure)
//   cohort-simulate --seeds K --steps N    seeds 1…K (or from --seed)
//   cohort-simulate --minutes M            seeds one after another for M minutes of wall clock
//   cohort-simulate --seeds K --minutes M  seeds 1…K, stopping early when M minutes have passed
//
// Prints each seed's steps and trace hash, then the totals and every fault injected; exits 1
// at the first failure, with the seed, step, invariant and last events, and a shorter run that
// fails the same way (``shrink(_:_:)``), with the command that replays it.
import CohortSimulation
import Foundation

struct Options {
    var seed: UInt64?
    var seeds: Int?
    var steps = 20_000
    var minutes: Double?
    var workers = 4
    var clients = 3
    var quietEvents = false
    var trace = false
    var noCoordinatorCrash = false
    var mutation: Mutation?
    var shrinks = true
}

let mutationUsage: String = {
    #if DELIBERATE_BUGS
        "\n  --mutation NAME   a deliberate bug that the invariants must catch (builds with DELIBERATE_BUGS: debug, and scripts/test's): "
            + Mutation.allCases.map(\.rawValue).joined(separator: ", ")
    #else
        ""
    #endif
}()

let usage =
    """
    usage: cohort-simulate [--seed S] [--seeds K] [--steps N] [--minutes M] [--workers W] [--clients C] [--quiet]
      --seed S      the first seed (default 1); with --steps N alone, replays that seed
      --seeds K     how many seeds, S, S+1, … (default 1)
      --steps N     steps with faults per seed, before the quiet phase (default 20000)
      --minutes M   run seeds until M minutes of wall clock have passed; with --seeds K, at most K
                    (a seed started finishes; the totals say how many ran)
      --workers W   simulated workers (default 4); --clients C  simulated clients (default 3)
      --quiet       print only the totals
      --trace       print every event of the trace
      --no-coordinator-crash   every fault but coordinator crashes
      --no-shrink   on a failure, do not look for a shorter run that fails the same way
    """ + mutationUsage

func parse(_ arguments: [String]) -> Options? {
    var options = Options()
    var index = 0
    func value() -> String? {
        index += 1
        return index < arguments.count ? arguments[index] : nil
    }
    while index < arguments.count {
        switch arguments[index] {
        case "--seed":
            guard let text = value(), let number = UInt64(text) else { return nil }
            options.seed = number
        case "--seeds":
            guard let text = value(), let number = Int(text), number > 0 else { return nil }
            options.seeds = number
        case "--steps":
            guard let text = value(), let number = Int(text), number >= 0 else { return nil }
            options.steps = number
        case "--minutes":
            guard let text = value(), let number = Double(text), number > 0 else { return nil }
            options.minutes = number
        case "--workers":
            guard let text = value(), let number = Int(text), number > 0 else { return nil }
            options.workers = number
        case "--clients":
            guard let text = value(), let number = Int(text), number > 0 else { return nil }
            options.clients = number
        case "--quiet": options.quietEvents = true
        case "--trace": options.trace = true
        case "--no-coordinator-crash": options.noCoordinatorCrash = true
        case "--no-shrink": options.shrinks = false
        #if DELIBERATE_BUGS
            case "--mutation":
                guard let text = value(), let mutation = Mutation(rawValue: text) else { return nil }
                options.mutation = mutation
        #endif
        default: return nil
        }
        index += 1
    }
    return options
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
guard let options = parse(arguments) else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}

let started = ContinuousClock.now
let deadline = options.minutes.map { started + .seconds($0 * 60) }
var seed = options.seed ?? 1
var runs = 0
var totalSteps = 0
var faults: [String: Int] = [:]
var events: [String: Int] = [:]
let seedLimit = options.seeds ?? (deadline == nil ? 1 : Int.max)
while runs < seedLimit, deadline.map({ ContinuousClock.now < $0 }) ?? true {
    var configuration = SimulationConfiguration(seed: seed, steps: options.steps)
    configuration.workers = options.workers
    configuration.clients = options.clients
    if options.trace { configuration.onTrace = { print($0) } }
    configuration.coordinatorCrashes = !options.noCoordinatorCrash
    configuration.mutation = options.mutation
    var simulation = Simulation(configuration)
    let report = simulation.run()
    runs += 1
    totalSteps += report.steps
    faults.merge(report.faults, uniquingKeysWith: +)
    events.merge(report.events, uniquingKeysWith: +)
    if !options.quietEvents {
        print(
            "seed \(report.seed): \(report.steps) steps, \(report.groupsAccepted) groups, simulated \(report.simulatedTime), trace \(String(report.traceHash, radix: 16))"
        )
    }
    if let failure = report.failure {
        print(failure)
        if options.shrinks {
            print("shrinking: looking for a shorter run that fails \(failure.invariant.rawValue) …")
            let (shrunk, shorter) = shrink(configuration, failure)
            print(
                "shrunk: fails \(shorter.invariant.rawValue) at step \(shorter.step) (was \(failure.step)): "
                    + (options.mutation == nil ? "scripts/simulate" : "swift run cohort-simulate")
                    + " --seed \(shrunk.seed) --steps \(shrunk.steps) --workers \(shrunk.workers) "
                    + "--clients \(shrunk.clients)\(shrunk.coordinatorCrashes ? "" : " --no-coordinator-crash")"
                    + (options.mutation.map { " --mutation \($0.rawValue)" } ?? ""))
        }
        exit(1)
    }
    seed += 1
}
let seconds =
    Double((ContinuousClock.now - started).components.seconds) + 1e-18
    * Double((ContinuousClock.now - started).components.attoseconds)
let cutShort = runs < seedLimit && seedLimit != Int.max ? " (the time budget ended it: \(runs) of \(seedLimit))" : ""
print(
    "simulated \(runs) seeds\(cutShort), \(totalSteps) steps in \(String(format: "%.1f", seconds)) s (\(Int(Double(totalSteps) / max(seconds, 0.001))) steps/s)"
)
print("faults: " + faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
print("events: " + events.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))

/// A shorter run that fails the same invariant, found greedily: faults only up to the failing
/// step (the run before it is the same), then half as many steps while it still fails, then
/// fewer workers and clients, then no coordinator crashes. Each candidate is a whole run with
/// the same seed; the first that no longer fails stops that direction.
func shrink(_ base: SimulationConfiguration, _ failure: SimulationFailure) -> (
    SimulationConfiguration, SimulationFailure
) {
    func failsAlike(_ candidate: SimulationConfiguration) -> SimulationFailure? {
        var candidate = candidate
        candidate.onTrace = nil
        var simulation = Simulation(candidate)
        let found = simulation.run().failure
        return found?.invariant == failure.invariant ? found : nil
    }
    var best = (base, failure)
    var candidate = base
    candidate.steps = min(base.steps, failure.step)
    if let found = failsAlike(candidate) { best = (candidate, found) }
    while best.0.steps > 50 {
        var shorter = best.0
        shorter.steps /= 2
        guard let found = failsAlike(shorter) else { break }
        best = (shorter, found)
    }
    for peers in [\SimulationConfiguration.workers, \SimulationConfiguration.clients] {
        while best.0[keyPath: peers] > 1 {
            var fewer = best.0
            fewer[keyPath: peers] -= 1
            guard let found = failsAlike(fewer) else { break }
            best = (fewer, found)
        }
    }
    if best.0.coordinatorCrashes {
        var calmer = best.0
        calmer.coordinatorCrashes = false
        if let found = failsAlike(calmer) { best = (calmer, found) }
    }
    return best
}

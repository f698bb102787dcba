// Growth gates: the cost per item of each path whose work grows with a spec's size, measured
// at two sizes in the same run. A path fails when the larger size costs more than `--limit`
// (1.3) times the smaller's per item: a ratio, which a slow or noisy machine moves for both
// sizes alike, not an absolute time.
//
//   swift run -c release bench-growth [--small N] [--large N] [--rounds R] [--limit X] [--json]
//
// Paths (docs/performance.md): parse and validate a JSON and a YAML spec of N children, the
// same nested in groups of 100, flatten it for scheduling, add 1,000 children to a group of
// N, parse N children to add that name a sibling of the running group, reject a spec of N
// unknown references, expand a matrix of N cells and flatten it. Each figure is the best of `--rounds`.
// A path over the limit is measured up to 3 times more, each size keeping its best: a busy
// stretch of a shared machine passes on a later attempt, a cost that grows stays over.
// Exit status 1 when any path grows faster than the limit.
import CohortSpec
import Foundation

struct Options {
    var small = 2_500
    var large = 10_000
    var rounds = 5
    var limit = 1.3
    var json = false

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        func number(_ flag: String) -> String {
            guard let value = iterator.next() else { fail("\(flag) needs a value") }
            return value
        }
        while let argument = iterator.next() {
            switch argument {
            case "--small": small = Int(number(argument)) ?? { fail("--small must be a whole number") }()
            case "--large": large = Int(number(argument)) ?? { fail("--large must be a whole number") }()
            case "--rounds": rounds = Int(number(argument)) ?? { fail("--rounds must be a whole number") }()
            case "--limit": limit = Double(number(argument)) ?? { fail("--limit must be a number") }()
            case "--json": json = true
            case "--help", "-h":
                print(
                    """
                    usage: bench-growth [--small N] [--large N] [--rounds R] [--limit X] [--json]
                      Measures each spec path at N = small and large children and fails (exit 1)
                      when the large size's cost per child exceeds X times the small's.
                      Defaults: --small 2500 --large 10000 --rounds 5 --limit 1.3
                    """)
                exit(0)
            default: fail("unknown argument \(argument) (see --help)")
            }
        }
        guard small > 0, large > small, rounds > 0, limit >= 1 else {
            fail("need 0 < --small < --large, --rounds > 0 and --limit >= 1")
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench-growth: \(message)\n".utf8))
    exit(64)
}

/// Limits wide enough for the sizes measured (the defaults allow 10,000 children and 1 MiB).
func limits(for size: Int) -> SpecLimits {
    var limits = SpecLimits.default
    limits.maxSpecBytes = max(limits.maxSpecBytes, size * 200)
    limits.maxChildrenPerGroup = max(limits.maxChildrenPerGroup, size + 1_000)
    limits.maxTotalChildren = max(limits.maxTotalChildren, size * 2 + 1_000)
    limits.maxNodes = max(limits.maxNodes, size * 40)
    return limits
}

func flatJSON(_ count: Int) -> String {
    let children = (0..<count).map { #"{"name":"c\#($0)","run":"echo","with":{"n":\#($0)}}"# }
    return #"{"name":"growth","children":["# + children.joined(separator: ",") + "]}"
}

func flatYAML(_ count: Int) -> String {
    "name: growth\nchildren:\n"
        + (0..<count).map { "  - name: c\($0)\n    run: echo\n    with: { n: \($0) }\n" }.joined()
}

/// `count` children in groups of 100, each child after the one before it in its group.
func nestedJSON(_ count: Int) -> String {
    let groups = stride(from: 0, to: count, by: 100).map { start in
        let members = (start..<min(start + 100, count)).map { index in
            index == start
                ? #"{"name":"c\#(index)","run":"echo"}"#
                : #"{"name":"c\#(index)","run":"echo","after":["c\#(index - 1)"]}"#
        }
        return #"{"name":"g\#(start / 100)","group":{"children":["# + members.joined(separator: ",") + "]}}"
    }
    return #"{"name":"nested","children":["# + groups.joined(separator: ",") + "]}"
}

/// A matrix of about `count` cells (two axes of √count values).
func matrixJSON(_ count: Int) -> (text: String, cells: Int) {
    let side = Int(Double(count).squareRoot().rounded())
    let values = (0..<side).map(String.init).joined(separator: ",")
    return (
        #"{"name":"matrix","children":[{"name":"cell","run":"echo","matrix":{"a":[\#(values)],"b":[\#(values)]}}]}"#,
        side * side
    )
}

struct GrowthError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    let (whole, attoseconds) = (clock.now - start).components
    return Double(whole) + Double(attoseconds) / 1e18
}

struct Path {
    var name: String
    /// Builds the input for a size, then returns the timed work and how many items it covers.
    var prepare: (Int) throws -> (items: Int, run: () throws -> Void)
}

let options = Options(CommandLine.arguments)

let paths: [Path] = [
    Path(name: "parse JSON (validate)") { size in
        let text = flatJSON(size)
        return (size, { _ = try SpecParser.parse(text: text, format: .json, limits: limits(for: size)) })
    },
    Path(name: "parse YAML (validate)") { size in
        let text = flatYAML(size)
        return (size, { _ = try SpecParser.parse(text: text, format: .yaml, limits: limits(for: size)) })
    },
    Path(name: "parse nested, chained") { size in
        let text = nestedJSON(size)
        return (size, { _ = try SpecParser.parse(text: text, format: .json, limits: limits(for: size)) })
    },
    Path(name: "flatten") { size in
        let spec = try SpecParser.parse(text: flatJSON(size), format: .json, limits: limits(for: size))
        return (size, { _ = spec.flattened() })
    },
    Path(name: "flatten nested, chained") { size in
        let spec = try SpecParser.parse(text: nestedJSON(size), format: .json, limits: limits(for: size))
        return (size, { _ = spec.flattened() })
    },
    Path(name: "add 1,000 children") { size in
        // Cost per child of the grown group: adding validates the whole grown spec.
        let spec = try SpecParser.parse(text: flatJSON(size), format: .json, limits: limits(for: size))
        let added = (0..<1_000).map { #"{"name":"added\#($0)","run":"echo"}"# }
        let text = "[" + added.joined(separator: ",") + "]"
        return (
            size + 1_000,
            {
                let children = try SpecParser.parseChildren(text: text, format: .json, limits: limits(for: size))
                _ = try spec.adding(children, into: "", limits: limits(for: size))
            }
        )
    },
    Path(name: "children to add, naming others") { size in
        // What `cohort add` parses: children that wait for a sibling only the running group has.
        let text =
            "[" + (0..<size).map { #"{"name":"a\#($0)","run":"echo","after":["gate"]}"# }.joined(separator: ",") + "]"
        return (size, { _ = try SpecParser.parseChildren(text: text, format: .json, limits: limits(for: size)) })
    },
    Path(name: "invalid: every name unknown") { size in
        // A hostile or broken spec: the errors' cost stays linear too.
        let children = (0..<size).map { #"{"name":"c\#($0)","run":"echo","after":["missing\#($0)"]}"# }
        let text = #"{"name":"broken","children":["# + children.joined(separator: ",") + "]}"
        return (
            size,
            {
                do {
                    _ = try SpecParser.parse(text: text, format: .json, limits: limits(for: size))
                    throw GrowthError("the broken spec was accepted")
                } catch let errors as SpecErrors {
                    guard errors.errors.count == size else { throw GrowthError("\(errors.errors.count) errors") }
                }
            }
        )
    },
    Path(name: "matrix: parse and flatten") { size in
        let (text, cells) = matrixJSON(size)
        return (
            cells,
            {
                let spec = try SpecParser.parse(text: text, format: .json, limits: limits(for: cells))
                _ = spec.flattened()
            }
        )
    },
]

struct Figure {
    var path: String
    var smallMicroseconds: Double
    var largeMicroseconds: Double
    /// How many times it was measured (more than once: it was over the limit at first).
    var attempts = 1
    var growth: Double { largeMicroseconds / smallMicroseconds }
}

/// The best of `rounds` runs, as microseconds per item; sizes interleaved so that a slow
/// stretch of the machine falls on both. A path over the limit is measured again, up to
/// `retries` times, and the attempt with the smallest growth counts: a busy stretch that
/// slowed only the larger size's runs passes on a later attempt, while a cost that really
/// grows with size (2× or 4× from 2,500 to 10,000 for a quadratic path) stays over on every
/// one. Each attempt compares its own figures: keeping each size's best over every attempt
/// compared a fast moment's small size with a slower moment's large one (a machine that
/// slowed by half between attempts failed `matrix` at 1.82×, then passed at 1.12×).
func measure(_ path: Path, retries: Int = 3) throws -> Figure {
    let small = try path.prepare(options.small)
    let large = try path.prepare(options.large)
    try small.run()  // warm-up
    try large.run()
    var best = (small: Double.infinity, large: Double.infinity, growth: Double.infinity)
    var attempts = 0
    repeat {
        attempts += 1
        var (bestSmall, bestLarge) = (Double.infinity, Double.infinity)
        for _ in 0..<options.rounds {
            bestSmall = min(bestSmall, try seconds(small.run) / Double(small.items))
            bestLarge = min(bestLarge, try seconds(large.run) / Double(large.items))
        }
        if bestLarge / bestSmall < best.growth { best = (bestSmall, bestLarge, bestLarge / bestSmall) }
    } while best.growth > options.limit && attempts <= retries
    return Figure(
        path: path.name, smallMicroseconds: best.small * 1e6, largeMicroseconds: best.large * 1e6, attempts: attempts)
}

var figures: [Figure] = []
for path in paths {
    do {
        figures.append(try measure(path))
    } catch {
        FileHandle.standardError.write(Data("bench-growth: \(path.name) failed: \(error)\n".utf8))
        exit(70)
    }
}
let failing = figures.filter { $0.growth > options.limit }

if options.json {
    let rows = figures.map { figure in
        #"{"path":"\#(figure.path)","small":\#(options.small),"large":\#(options.large),"#
            + #""smallMicrosecondsPerItem":\#(figure.smallMicroseconds),"largeMicrosecondsPerItem":\#(figure.largeMicroseconds),"#
            + #""growth":\#(figure.growth),"limit":\#(options.limit),"ok":\#(figure.growth <= options.limit),"#
            + #""attempts":\#(figure.attempts)}"#
    }
    print("[" + rows.joined(separator: ",") + "]")
} else {
    print("cost per item at \(options.small) and \(options.large), best of \(options.rounds); limit \(options.limit)x")
    for figure in figures {
        let verdict = figure.growth <= options.limit ? "ok" : "GROWS"
        print(
            figure.path.padding(toLength: 28, withPad: " ", startingAt: 0)
                + String(
                    format: "%9.2f µs %9.2f µs  %5.2fx  ", figure.smallMicroseconds, figure.largeMicroseconds,
                    figure.growth) + verdict
                + (figure.attempts > 1 ? " (measured \(figure.attempts) times: over the limit at first)" : ""))
    }
}
if !failing.isEmpty {
    FileHandle.standardError.write(
        Data("bench-growth: cost per item grows with size: \(failing.map(\.path).joined(separator: ", "))\n".utf8))
    exit(1)
}

// swift-tools-version:6.1
// Cohort: group procedures across a cluster. The module layout is docs/architecture.md's.
import PackageDescription

// CI builds the project's own targets with warnings as errors (.ci/run sets
// WARNINGS_AS_ERRORS=1); a developer's build only shows them. A package that depends on
// Cohort never sees the flag (SwiftPM refuses unsafe flags in dependencies).
let warningsAsErrors: [SwiftSetting] =
    Context.environment["WARNINGS_AS_ERRORS"] == "1" ? [.unsafeFlags(["-warnings-as-errors"])] : []

// DELIBERATE_BUGS compiles in the switches for the deliberate bugs the simulation's tests show
// its invariants catch (docs/simulation.md, "Bug classes"): in debug builds, and in the
// optimized test build of scripts/test (which passes -DDELIBERATE_BUGS); never in a release build.
let strict: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .define("DELIBERATE_BUGS", .when(configuration: .debug)),
    ] + warningsAsErrors

let package = Package(
    name: "Cohort",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Procedures", targets: ["Procedures"]),
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        .library(name: "CohortWire", targets: ["CohortWire"]),
        .library(name: "CohortSpec", targets: ["CohortSpec"]),
        .library(name: "CohortCore", targets: ["CohortCore"]),
        .library(name: "CohortCoordinator", targets: ["CohortCoordinator"]),
        .library(name: "CohortWorker", targets: ["CohortWorker"]),
        .library(name: "CohortClient", targets: ["CohortClient"]),
        .library(name: "CohortJournal", targets: ["CohortJournal"]),
        .library(name: "CohortSimulation", targets: ["CohortSimulation"]),
        .executable(name: "cohort", targets: ["cohort"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // The coordinator's journal: SQLite through GRDB (links the system libsqlite3).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Worker and client are Services: a ServiceGroup runs them and turns SIGTERM into a drain.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Metrics: swift-metrics in the coordinator and worker, served by swift-prometheus
        // (docs/operations.md, "Metrics").
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The metrics endpoint and the coordinator's web dashboard (docs/http.md) are served by
        // Hummingbird; the browser tests drive headless Chromium over a WebSocket with
        // HummingbirdWSClient.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // The journal's PostgreSQL store (`cohort coordinator --journal postgres://…`).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // The local engine: procedures, queues, groups, conditions, observers, injection. No I/O.
        .target(
            name: "Procedures",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),

        // libzmq, seen only by the ZeroMQ module.
        .systemLibrary(
            name: "CZeroMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"]), .brew(["zeromq"])]
        ),
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ"], swiftSettings: strict),

        // The wire protocol: Swift models, the protobuf schema's generated code, framing.
        .target(
            name: "CohortWire",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["Schema/cohort.proto"],
            swiftSettings: strict
        ),

        // Specs: reading and validating YAML/JSON group specs, JSON values and paths. Reads no
        // files (the CLI does); everyone who only speaks specs (client, worker) depends on this.
        .target(
            name: "CohortSpec",
            dependencies: [.product(name: "Yams", package: "Yams")],
            swiftSettings: strict
        ),

        // The cluster's decisions as pure state machines: the scheduler (group runs, placement,
        // attempts), the lock table, membership. No I/O, no Yams: only the coordinator links it.
        .target(
            name: "CohortCore",
            dependencies: [
                "CohortSpec", "Procedures",
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),

        // A deterministic simulation of the cluster (issue 11, docs/simulation.md): the real
        // scheduler, simulated workers, clients, network and faults, driven by one seed.
        .target(
            name: "CohortSimulation", dependencies: ["CohortCore", "CohortSpec", "CohortWire", "CohortClientCore"],
            swiftSettings: strict),
        .executableTarget(
            name: "cohort-simulate", dependencies: ["CohortSimulation"], swiftSettings: strict),

        // The coordinator's journal: accepted groups and their state in SQLite (WAL), so a
        // restarted coordinator carries on (docs/operations.md, "The journal").
        .target(
            name: "CohortJournal",
            dependencies: [
                "CohortCore", "CohortSpec", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),

        // The journal in PostgreSQL (`--journal postgres://…`): the same JournalStore protocol over
        // postgres-nio. A target of its own so that CohortJournal, and the coordinator library
        // built on it, stay SQLite-only; the `cohort` command links both stores.
        .target(
            name: "CohortJournalPostgres",
            dependencies: [
                "CohortJournal", "CohortCore", "CohortSpec",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // The coordinator: a ROUTER loop on its own thread driving CohortCore's state machines.
        .target(
            name: "CohortCoordinator",
            dependencies: [
                "CohortCore", "CohortSpec", "CohortWire", "CohortJournal", "ZeroMQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),

        // The worker's spawn of shell children (fork and exec, dying with the worker on Linux).
        .target(name: "CCohortSpawn"),
        // The worker: a DEALER loop, a ProcedureQueue, the procedure registry and built-ins.
        .target(
            name: "CohortWorker",
            dependencies: [
                "CCohortSpawn",
                "Procedures", "CohortCore", "CohortSpec", "CohortWire", "ZeroMQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),

        // Prometheus metrics (issue 15): a PrometheusCollectorRegistry bootstrapped as the
        // swift-metrics backend and `GET /metrics` served over Hummingbird.
        .target(
            name: "CohortMetrics",
            dependencies: [
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // The client's session as a state machine (handshake, requests, watches, reconnecting)
        // and its errors: no ZeroMQ, no logging library, so that the simulation runs it too.
        .target(name: "CohortClientCore", dependencies: ["CohortSpec", "CohortWire"], swiftSettings: strict),

        // The Swift client API the CLI is built on.
        .target(
            name: "CohortClient",
            dependencies: [
                "CohortClientCore", "CohortSpec", "CohortWire", "ZeroMQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // The coordinator's web dashboard and JSON HTTP API (docs/http.md): a Hummingbird server
        // that reads and acts through the Swift client API connected to the coordinator itself.
        .target(
            name: "CohortDashboard",
            dependencies: [
                "CohortClient", "CohortSpec", "CohortWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Pages"],
            swiftSettings: strict
        ),

        // The `cohort` command: one ArgumentParser command per file.
        .executableTarget(
            name: "cohort",
            dependencies: [
                "CohortClient", "CohortCoordinator", "CohortJournal", "CohortJournalPostgres", "CohortWorker",
                "CohortCore", "CohortSpec", "CohortMetrics", "CohortDashboard",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),

        // A worker binary with its own procedure kinds, built on the CohortWorker API.
        .executableTarget(
            name: "custom-worker",
            dependencies: [
                "CohortWorker", "ZeroMQ", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "examples/CustomWorker",
            swiftSettings: strict
        ),

        // Test support, shared by the test targets (docs/architecture.md, "What is tested where"): a manual clock, deadline
        // waits, Locked, an async inbox, a seeded generator. No Cohort module, no ZeroMQ, so
        // ProceduresTests links only Procedures and this.
        .target(name: "CohortTestSupport", path: "Tests/CohortTestSupport", swiftSettings: strict),
        // The one fake peer over real ZeroMQ (a DEALER playing a worker or a client, a ROUTER
        // playing the coordinator) and an in-process coordinator on a free loopback port.
        .target(
            name: "CohortPeerSupport",
            dependencies: [
                "CohortTestSupport", "CohortWire", "ZeroMQ", "CohortCoordinator",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Tests/CohortPeerSupport",
            swiftSettings: strict
        ),

        .testTarget(name: "ProceduresTests", dependencies: ["Procedures", "CohortTestSupport"], swiftSettings: strict),
        // ProcedureKit's own tests, ported to Cohort's API with their names (issue 13).
        .testTarget(
            name: "ProcedureKitParityTests", dependencies: ["Procedures", "CohortTestSupport"], swiftSettings: strict),
        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ", "CohortTestSupport"], swiftSettings: strict),
        .testTarget(name: "CohortWireTests", dependencies: ["CohortWire", "CohortTestSupport"], swiftSettings: strict),
        .testTarget(name: "CohortSpecTests", dependencies: ["CohortSpec"], swiftSettings: strict),
        .testTarget(
            name: "CohortMetricsTests",
            dependencies: [
                "CohortMetrics", "CohortCoordinator", "CohortJournal", "CohortWorker", "CohortCore", "CohortSpec",
                "CohortWire",
                "CohortTestSupport", "CohortPeerSupport",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict),
        .testTarget(name: "CohortCoreTests", dependencies: ["CohortCore", "CohortSpec"], swiftSettings: strict),
        .testTarget(
            name: "CohortSimulationTests",
            dependencies: ["CohortSimulation", "CohortCore", "CohortSpec", "CohortWire", "CohortTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "CohortJournalTests",
            dependencies: [
                "CohortJournal", "CohortJournalPostgres", "CohortCore", "CohortSpec", "CohortTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "CohortCoordinatorTests",
            dependencies: [
                "CohortCoordinator", "CohortCore", "CohortSpec", "CohortJournal", "CohortWire", "ZeroMQ",
                "CohortTestSupport", "CohortPeerSupport", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "CohortWorkerTests",
            dependencies: [
                "CohortWorker", "CohortSpec", "CohortWire", "ZeroMQ", "CohortTestSupport", "CohortPeerSupport",
            ],
            swiftSettings: strict),
        // The dashboard's HTTP API against an in-process coordinator.
        .testTarget(
            name: "CohortDashboardTests",
            dependencies: [
                "CohortDashboard", "CohortClient", "CohortCoordinator", "CohortWorker", "CohortSpec",
                "CohortTestSupport",
                "CohortPeerSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "CohortClientTests",
            dependencies: [
                "CohortClient", "CohortClientCore", "CohortCoordinator", "CohortSpec", "CohortWire",
                "CohortTestSupport",
                "CohortPeerSupport",
            ],
            swiftSettings: strict),
        // End to end: real `cohort` processes on 127.0.0.1 (the test target depends on the
        // executables so that `swift build --build-tests` builds them).
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "cohort", "custom-worker", "CohortCore", "CohortSpec", "CohortClient", "CohortWire",
                "CohortTestSupport",
                "CohortPeerSupport",
                // The dashboard's browser tests speak the Chrome DevTools Protocol over a WebSocket.
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ],
            swiftSettings: strict
        ),

        // Benchmarks: release-mode executables that print ratios against a baseline in the same run.
        .executableTarget(
            name: "bench-procedures",
            dependencies: ["Procedures"],
            path: "Benchmarks/bench-procedures",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bench-zeromq",
            dependencies: ["ZeroMQ"],
            path: "Benchmarks/bench-zeromq",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bench-cluster",
            dependencies: [
                "CohortClient", "CohortMetrics", .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Benchmarks/bench-cluster",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bench-growth",
            dependencies: ["CohortSpec"],
            path: "Benchmarks/bench-growth",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bench-wire",
            dependencies: ["CohortWire"],
            path: "Benchmarks/bench-wire",
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)

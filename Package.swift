// swift-tools-version:6.1
// Cohort: group procedures across a cluster. The module layout follows DESIGN.md §4.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Cohort",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Procedures", targets: ["Procedures"]),
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        .library(name: "CohortWire", targets: ["CohortWire"]),
        .library(name: "CohortCore", targets: ["CohortCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
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

        // The cluster model as pure state machines: spec, scheduler, lock table, membership.
        .target(
            name: "CohortCore",
            dependencies: [
                "Procedures",
                .product(name: "Yams", package: "Yams"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),

        .testTarget(name: "ProceduresTests", dependencies: ["Procedures"], swiftSettings: strict),
        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ"], swiftSettings: strict),
        .testTarget(name: "CohortWireTests", dependencies: ["CohortWire"], swiftSettings: strict),
        .testTarget(name: "CohortCoreTests", dependencies: ["CohortCore"], swiftSettings: strict),

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
            name: "bench-wire",
            dependencies: ["CohortWire"],
            path: "Benchmarks/bench-wire",
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)

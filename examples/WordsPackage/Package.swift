// swift-tools-version:6.1
// A package that uses Cohort: shared typed kinds, a worker that runs them, a client that
// submits them. Copy this folder next to a clone of Cohort in a folder named `cohort`
// (docs/swift.md), or depend on Cohort by URL instead of by path.
import PackageDescription

let package = Package(
    name: "Words",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../cohort"),
        // or: .package(url: "https://github.com/OWNER/cohort.git", branch: "main"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // The kinds, with their input and output types: shared by the worker and the client.
        .target(name: "WordKinds", dependencies: [.product(name: "CohortSpec", package: "cohort")]),
        // What the kinds do, registered on a worker's registry.
        .target(
            name: "WordWorker",
            dependencies: ["WordKinds", .product(name: "CohortWorker", package: "cohort")]),
        .executableTarget(
            name: "words-worker",
            dependencies: [
                "WordWorker", .product(name: "CohortWorker", package: "cohort"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .executableTarget(
            name: "words-client",
            dependencies: ["WordKinds", .product(name: "CohortClient", package: "cohort")]),
        .testTarget(name: "WordWorkerTests", dependencies: ["WordWorker", "WordKinds"]),
    ]
)

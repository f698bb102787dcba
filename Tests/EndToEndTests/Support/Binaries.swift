import Foundation

/// Where the executables under test are: `COHORT_BIN` (a directory holding `cohort` and
/// `custom-worker`, or the `cohort` binary itself), else the directory of this test process
/// (SwiftPM puts the test bundle next to the products it built).
enum Binaries {
    static let directory: String = {
        if let configured = ProcessInfo.processInfo.environment["COHORT_BIN"], !configured.isEmpty {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: configured, isDirectory: &isDirectory), !isDirectory.boolValue {
                return (configured as NSString).deletingLastPathComponent
            }
            return configured
        }
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? Bundle.main.executablePath ?? CommandLine.arguments[0]
        var directory = (executable as NSString).deletingLastPathComponent
        // macOS: …/debug/CohortPackageTests.xctest/Contents/MacOS/CohortPackageTests
        while !FileManager.default.isExecutableFile(atPath: directory + "/cohort"), directory.count > 1,
            directory.contains(".xctest")
        {
            directory = (directory as NSString).deletingLastPathComponent
        }
        return directory
    }()

    static var cohort: String { directory + "/cohort" }
    static var customWorker: String { directory + "/custom-worker" }

    /// The repository's root (for `examples/`), found from this source file's path.
    static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }  // Support, EndToEndTests, Tests, root
        return url.path
    }()
}

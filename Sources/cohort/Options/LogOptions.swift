import ArgumentParser
import Foundation
import Logging

/// `--log-level`: how much the command logs to stderr (env COHORT_LOG_LEVEL).
struct LogOptions: ParsableArguments {
    @Option(
        name: .customLong("log-level"),
        help: ArgumentHelp(
            "trace, debug, info, notice, warning, error or critical (env COHORT_LOG_LEVEL).",
            valueName: "level"))
    var level: String?

    func validate() throws {
        if let level, Logger.Level(rawValue: level) == nil {
            throw ValidationError(
                "--log-level: \"\(level)\" is not one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// The level: the flag, then `COHORT_LOG_LEVEL`, then `fallback`.
    func resolved(default fallback: Logger.Level) -> Logger.Level {
        if let level, let parsed = Logger.Level(rawValue: level) { return parsed }
        if let text = ProcessInfo.processInfo.environment["COHORT_LOG_LEVEL"], let parsed = Logger.Level(rawValue: text)
        {
            return parsed
        }
        return fallback
    }

    /// Sends logs to stderr at the resolved level and returns a logger labelled `label`.
    /// Call once per process, first thing in `run()`.
    func bootstrap(_ label: String, default fallback: Logger.Level = .warning) -> Logger {
        let level = resolved(default: fallback)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}

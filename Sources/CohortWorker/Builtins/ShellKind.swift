import CohortSpec
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `shell` built-in: runs `command` (no shell unless you ask for one, `["sh", "-c", …]`)
/// in its own process group.
///
/// Input: `command` [String] (required), `env` {String: String}, `stdin` String, `cwd`
/// String. Output: `{exitCode, stdout, stderr}`. A non-zero exit fails the attempt with
/// an error naming the code and the tail of stderr. Cancelling the attempt sends SIGTERM
/// to the process group and SIGKILL after the worker's kill grace; the attempt finishes
/// only once the process is gone.
///
/// The process sees the worker's environment, then the dispatch's extra variables, then
/// `env`, then a matrix child's `COHORT_MATRIX_*` and a map child's `COHORT_MAP_*`, then the other `COHORT_*` variables
/// (which nothing overrides).
enum ShellKind {
    static func run(_ input: Data, _ context: ProcedureContext) async throws -> Data {
        let command = try ShellCommand(input: input, context: context)
        try Task.checkCancellation()
        let process: Subprocess
        do {
            let ref = context.ref
            process = try Subprocess.spawn(
                command, maxOutput: context.settings.maxCapturedOutput, killGrace: context.settings.killGrace,
                log: context.settings.logs.map { logs in
                    { @Sendable isStderr, bytes, mayWait in
                        logs.write(ref, isStderr ? .stderr : .stdout, bytes, mayWait: mayWait)
                    }
                })
        } catch {
            throw ShellError(message: error.message)
        }
        context.settings.processesStarted?.increment()
        let grace = context.settings.killGrace
        // A worker whose lease ended kills at once, even a process already in its grace.
        context.scope.onKillAtOnce { process.terminate(grace: .zero) }
        let termination = await withTaskCancellationHandler {
            await process.wait()
        } onCancel: {
            process.terminate(grace: context.scope.killsAtOnce ? .zero : grace)
        }
        if termination.droppedStdout > 0 || termination.droppedStderr > 0 {
            context.logger.warning(
                "shell output over the capture limit; kept the last bytes",
                metadata: [
                    "stdout.dropped": "\(termination.droppedStdout)", "stderr.dropped": "\(termination.droppedStderr)",
                ])
        }
        if Task.isCancelled { throw CancellationError() }
        let stderr = captured(termination.stderr, dropped: termination.droppedStderr)
        switch termination.status {
        case .exited(0):
            var output: [String: JSONValue] = [
                "exitCode": 0,
                "stdout": .string(captured(termination.stdout, dropped: termination.droppedStdout)),
                "stderr": .string(stderr),
            ]
            // Never silent: a cut stream says so in its text and in a flag.
            if termination.droppedStdout > 0 { output["stdoutTruncated"] = true }
            if termination.droppedStderr > 0 { output["stderrTruncated"] = true }
            return JSONValue.object(output).jsonData()
        case .exited(let code):
            throw ShellError(message: "exited with code \(code)\(tail(of: stderr))")
        case .signalled(let signal):
            throw ShellError(message: "killed by signal \(signal)\(tail(of: stderr))")
        }
    }

    /// The kept bytes of a stream, after a marker line when earlier bytes were dropped.
    static func captured(_ bytes: [UInt8], dropped: Int) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        guard dropped > 0 else { return text }
        return "[cohort: \(dropped) earlier bytes dropped: the output was over maxCapturedOutput]\n" + text
    }

    /// `: <last lines of stderr>`, at most 20 lines and 2000 characters; empty if stderr is.
    static func tail(of stderr: String) -> String {
        let trimmed = stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return " (stderr was empty)" }
        var lines = trimmed.split(separator: "\n", omittingEmptySubsequences: false).suffix(20).joined(separator: "\n")
        if lines.count > 2000 { lines = "…" + lines.suffix(2000) }
        return ": \(lines)"
    }
}

/// A `shell` child that could not run or did not succeed.
public struct ShellError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A validated `shell` input, ready to spawn.
struct ShellCommand {
    /// The program's path, found on the child's `PATH` unless `command[0]` has a `/`.
    var executable: String
    /// `command` as given: argv, program name first.
    var arguments: [String]
    var environment: [String: String]
    var directory: String?
    var stdin: String?

    init(input: Data, context: ProcedureContext) throws {
        let reader = try BuiltinInput(input, kind: "shell", fields: ["command", "env", "stdin", "cwd"])
        guard let command = try reader.strings("command") else {
            throw ProcedureInputError(
                field: "with.command", message: "missing; shell needs a command, e.g. [\"sh\", \"-c\", \"echo hello\"]")
        }
        guard let program = command.first, !program.isEmpty else {
            throw ProcedureInputError(
                field: "with.command", message: "a command cannot be empty; give at least the program")
        }
        var environment = ProcessInfo.processInfo.environment
        environment.merge(context.extraEnvironment) { _, new in new }
        if let variables = try reader.stringMap("env") {
            for name in variables.keys.sorted() where name.hasPrefix("COHORT_") || name.isEmpty || name.contains("=") {
                throw ProcedureInputError(
                    field: "with.env.\(name)",
                    message: name.hasPrefix("COHORT_")
                        ? "COHORT_ variables are set by the worker" : "not a variable name")
            }
            environment.merge(variables) { _, new in new }
        }
        environment.merge(reader.matrixVariables) { _, matrix in matrix }
        environment.merge(reader.mapVariables) { _, map in map }
        environment.merge(context.cohortVariables) { _, cohort in cohort }
        let directory = try reader.string("cwd")
        if let directory, directory.isEmpty {
            throw ProcedureInputError(field: "with.cwd", message: "a working directory cannot be empty")
        }
        self.arguments = command
        self.environment = environment
        self.directory = directory
        self.stdin = try reader.string("stdin")
        guard let executable = Self.find(program, path: environment["PATH"], directory: directory) else {
            throw ShellError(message: "cannot run \(program): not found on PATH")
        }
        self.executable = executable
    }

    /// `program` itself if it names a path, else the first executable file of that name on `path`.
    static func find(_ program: String, path: String?, directory: String?) -> String? {
        if program.contains("/") {
            guard !program.hasPrefix("/"), let directory else { return program }
            return directory.hasSuffix("/") ? directory + program : directory + "/" + program
        }
        let searchPath = path ?? "/usr/local/bin:/usr/bin:/bin"
        for entry in searchPath.split(separator: ":", omittingEmptySubsequences: false) {
            let folder = entry.isEmpty ? "." : String(entry)
            let candidate = folder.hasSuffix("/") ? folder + program : folder + "/" + program
            var info = stat()
            if access(candidate, X_OK) == 0, stat(candidate, &info) == 0, (info.st_mode & S_IFMT) != S_IFDIR {
                return candidate
            }
        }
        return nil
    }
}

import ArgumentParser
import CohortClient
import CohortCoordinator
import Foundation
import ZeroMQ

import enum CohortSpec.JSONValue

/// `cohort keygen`: write a CURVE key pair for an encrypted, authenticated cluster.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract:
            "Write a CURVE key pair (NAME.key, secret; NAME.pub, public) for a coordinator, worker, client or admin.",
        discussion: """
            A cluster with CURVE is encrypted, and the coordinator admits only the public keys \
            in its authorised-keys directory, each with a role:
              worker  registers as a worker and runs work, nothing else
              client  submits groups, cancels its own, reads status and results
              admin   everything, including cancelling any group and draining workers
            The coordinator's own key has the role coordinator.

            Files (docs/security.md): NAME.key holds the secret key (mode 0600; never copy it \
            to another machine than the one that uses it); NAME.pub holds one line \
            `ROLE KEY NAME` and is not secret. Existing files are never overwritten without \
            --force. The output directory is created if needed.

            Example, a coordinator, one worker and one client:
              cohort keygen --out keys --role coordinator
              cohort keygen --out keys --role worker --name builder-1
              cohort keygen --out keys --role client --name ci
              mkdir -p keys/auth && cp keys/builder-1.pub keys/ci.pub keys/auth/
              cohort coordinator --key keys/coordinator.key --authorized-keys keys/auth
              cohort worker --key keys/builder-1.key --server-key keys/coordinator.pub
              cohort submit release.yaml --key keys/ci.key --server-key keys/coordinator.pub
            """
    )

    @Option(name: .long, help: ArgumentHelp("The directory to write the two files to.", valueName: "dir"))
    var out: String

    @Option(name: .long, help: ArgumentHelp("coordinator, worker, client or admin.", valueName: "role"))
    var role: String

    @Option(name: .long, help: ArgumentHelp("The key's name and file names (default: the role).", valueName: "name"))
    var name: String?

    @Flag(name: .long, help: "Overwrite existing files of the same name.")
    var force = false

    @OptionGroup var output: OutputOptions

    private var keyName: String { name ?? role }
    private var secretPath: String { (out as NSString).appendingPathComponent("\(keyName).key") }
    private var publicPath: String { (out as NSString).appendingPathComponent("\(keyName).pub") }

    func validate() throws {
        guard KeyFiles.roles.contains(role) else {
            throw ValidationError("--role: \"\(role)\" is not one of \(KeyFiles.roles.joined(separator: ", "))")
        }
        guard !keyName.isEmpty, !keyName.hasPrefix("."),
            keyName.allSatisfy({ $0.isLetter || $0.isNumber || "-_.@".contains($0) })
        else {
            throw ValidationError(
                "--name: \"\(keyName)\" must be letters, digits, '-', '_', '.' or '@' (it names the files)")
        }
        if !force {
            for path in [secretPath, publicPath] where FileManager.default.fileExists(atPath: path) {
                throw ValidationError("\(path) already exists; choose another --name or pass --force to overwrite it")
            }
        }
    }

    func run() throws {
        let pair: CurveKeyPair
        do {
            pair = try CurveKeyPair.generate()
        } catch {
            Console.error("cannot generate a CURVE key pair (is libzmq built with CURVE?): \(error)")
            throw ExitCode(ExitStatus.software)
        }
        let created = WireTimestamp.now.rfc3339
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try write(
                KeyFiles.renderSecret(role: role, pair: pair, name: keyName, created: created), to: secretPath,
                mode: 0o600)
            try write(
                KeyFiles.renderPublic(role: role, key: pair.publicKey, name: keyName, created: created), to: publicPath,
                mode: 0o644)
        } catch {
            Console.error("cannot write the key files in \(out): \(error)")
            throw ExitCode(73)
        }
        if output.json {
            let shape: JSONValue = [
                "name": .string(keyName), "role": .string(role), "publicKey": .string(pair.publicKey.z85),
                "secretKeyFile": .string(secretPath), "publicKeyFile": .string(publicPath),
            ]
            Console.out(shape.jsonString())
            return
        }
        Console.out(nextSteps(pair.publicKey))
    }

    /// Writes `text` to a new file created with `mode` (so a secret key is never readable by
    /// others, not even for a moment).
    private func write(_ text: String, to path: String, mode: mode_t) throws {
        if force { unlink(path) }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, mode)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Foundation.write(descriptor, $0.baseAddress, $0.count) }) == bytes.count else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        fchmod(descriptor, mode)
    }

    private func nextSteps(_ key: CurvePublicKey) -> String {
        var lines = [
            "wrote \(secretPath) (secret, mode 0600) and \(publicPath) (public)",
            "public key: \(key.z85)",
            "",
            "next:",
        ]
        if role == "coordinator" {
            lines += [
                "  start the coordinator with its key and a directory of authorised public keys:",
                "    cohort coordinator --key \(secretPath) --authorized-keys DIR",
                "  (or secretKeyFile and authorizedKeysDir in config/coordinator.yaml)",
                "  give workers and clients \(publicPath): they pass it as --server-key",
            ]
        } else {
            lines += [
                "  authorise it: copy \(publicPath) into the coordinator's authorised-keys directory",
                "    (--authorized-keys DIR, or authorizedKeysDir in config/coordinator.yaml),",
                "    then send the coordinator SIGHUP (kill -HUP PID) to admit it without a restart",
            ]
            let command = role == "worker" ? "cohort worker" : "cohort submit FILE (or status, cancel, …)"
            lines += [
                "  connect with it, given the coordinator's public key (coordinator.pub from keygen --role coordinator):",
                "    \(command) --key \(secretPath) --server-key coordinator.pub",
                role == "worker"
                    ? "  (or keyFile and serverKey in config/worker.yaml; env COHORT_KEY_FILE, COHORT_SERVER_KEY)"
                    : "  (or env COHORT_KEY_FILE and COHORT_SERVER_KEY)",
            ]
        }
        return lines.joined(separator: "\n")
    }
}

import CohortWire
import Foundation
import Testing
import ZeroMQ

@testable import CohortCoordinator

@Suite struct RolePolicyTests {
    static let requests: [ClientRequest.Kind] = [
        .submit(Submission(document: "children: []", format: .yaml)), .status(group: nil), .status(group: "g"),
        .result(group: "g", path: "a"), .watch(group: "g"), .unwatch(group: "g"), .workers, .locks,
        .cancel(group: "g", path: nil, reason: ""),
    ]

    static func principal(_ role: Role, key: String = "K") -> Principal { Principal(key: key, name: "n", role: role) }

    @Test func aWorkerKeyMayOnlyRegister() {
        let worker = Self.principal(.worker)
        #expect(worker.may(.register))
        for request in Self.requests {
            let (permission, _) = try! #require(RequestPolicy.permission(for: request))
            #expect(!worker.may(permission), "a worker key may not \(permission)")
        }
    }

    @Test func aClientKeyMaySubmitReadAndCancelButNotRegisterOrDrain() {
        let client = Self.principal(.client)
        for request in Self.requests {
            let (permission, _) = try! #require(RequestPolicy.permission(for: request))
            #expect(client.may(permission))
        }
        #expect(!client.may(.register))
        #expect(!client.may(.drain))
        #expect(!client.may(.cancelAny))
    }

    @Test func undrainNeedsTheDrainPermissionLikeDrain() throws {
        let (drain, _) = try #require(RequestPolicy.permission(for: .drain(worker: "w")))
        let (undrain, doing) = try #require(RequestPolicy.permission(for: .undrain(worker: "w")))
        #expect(drain == .drain && undrain == .drain && doing == "undrain a worker")
        #expect(!Self.principal(.client).may(undrain))
    }

    @Test func anAdminMayDoEverything() {
        #expect(Role.admin.permissions == Set(Permission.allCases))
    }

    @Test func cancellingNeedsOwnershipOrCancelAny() {
        let alice = Self.principal(.client, key: "ALICE")
        #expect(RequestPolicy.mayCancel(alice, owner: "ALICE") == nil)
        #expect(RequestPolicy.mayCancel(alice, owner: "BOB") == .cancelAny)
        #expect(RequestPolicy.mayCancel(alice, owner: nil) == .cancelAny)
        #expect(RequestPolicy.mayCancel(Self.principal(.admin), owner: "BOB") == nil)
        #expect(RequestPolicy.mayCancel(Self.principal(.worker, key: "BOB"), owner: "BOB") == .cancel)
        #expect(RequestPolicy.mayCancel(.anonymous, owner: nil) == nil)
    }

    @Test func aRefusalNamesTheKeyItsRoleAndTheMissingPermission() {
        let text = Principal(key: "K", name: "ci", role: .worker).refusal(.submit, "submit a group")
        #expect(text.contains("\"ci\""))
        #expect(text.contains("role worker"))
        #expect(text.contains("permission \"submit\""))
    }
}

@Suite struct KeyFileTests {
    static let key = try! CurveKeyPair.generate()

    @Test func publicKeyFilesListRoleKeyAndName() throws {
        let text =
            KeyFiles.renderPublic(role: "client", key: Self.key.publicKey, name: "ci", created: "now")
            + "\n# another\nadmin \(Self.key.publicKey.z85)\n"
        let entries = try KeyFiles.parsePublic(text, file: "/keys/ci.pub")
        #expect(entries.map(\.role) == ["client", "admin"])
        #expect(entries.map(\.name) == ["ci", "ci"])  // the second takes the file's base name
        #expect(entries.allSatisfy { $0.key == Self.key.publicKey })
        #expect(entries[0].origin == "/keys/ci.pub:5")
    }

    @Test(arguments: [
        ("client", "role: expected", "expected `ROLE KEY [NAME]`"),
        ("boss KEY x", "", "unknown role \"boss\""),
        ("client notakey x", "", "is not a public key"),
        ("# only a comment", "", "no key in the file"),
    ])
    func malformedPublicFilesAreRefusedNamingTheLine(line: String, _ unused: String, message: String) {
        let text = line.replacingOccurrences(of: "KEY", with: Self.key.publicKey.z85)
        let error = #expect(throws: KeyFileError.self) { try KeyFiles.parsePublic(text, file: "f.pub") }
        #expect(error?.description.contains(message) == true, "\(String(describing: error))")
        #expect(error?.origin.hasPrefix("f.pub") == true)
    }

    @Test func secretKeyFilesRoundTripAndRejectAMismatchedPublicLine() throws {
        let text = KeyFiles.renderSecret(role: "worker", pair: Self.key, name: "w", created: "now")
        #expect(try KeyFiles.parseSecret(text, file: "w.key") == Self.key)
        let other = try CurveKeyPair.generate()
        let forged = text.replacingOccurrences(
            of: "public \(Self.key.publicKey.z85)", with: "public \(other.publicKey.z85)")
        #expect(throws: KeyFileError.self) { try KeyFiles.parseSecret(forged, file: "w.key") }
        let publicFile = KeyFiles.renderPublic(role: "worker", key: Self.key.publicKey, name: "w", created: "now")
        let error = #expect(throws: KeyFileError.self) { try KeyFiles.parseSecret(publicFile, file: "w.pub") }
        #expect(error?.message.contains("public key file") == true)
    }

    @Test func aSecretKeyFileReadableByOthersIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-\(UUID().uuidString).key").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = KeyFiles.renderSecret(role: "worker", pair: Self.key, name: "w", created: "now")
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o644]))
        let error = #expect(throws: KeyFileError.self) { try KeyFiles.loadSecret(path) }
        #expect(error?.message.contains("chmod 600") == true)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(try KeyFiles.loadSecret(path) == Self.key)
    }

    @Test func aServerKeyIsGivenAsZ85TextOrAsAPublicKeyFile() throws {
        #expect(try KeyFiles.publicKey(textOrFile: Self.key.publicKey.z85) == Self.key.publicKey)
        #expect(throws: KeyFileError.self) { try KeyFiles.publicKey(textOrFile: "/no/such/file.pub") }
    }
}

@Suite struct AuthorizedKeysTests {
    static func directory(_ files: [String: String]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-keys-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(toFile: "\(path)/\(name)", atomically: true, encoding: .utf8) }
        return path
    }

    @Test func everyPubFileOfTheDirectoryIsLoadedWithItsRole() throws {
        let worker = try CurveKeyPair.generate()
        let admin = try CurveKeyPair.generate()
        let path = try Self.directory([
            "w.pub": "worker \(worker.publicKey.z85) builder-1\n", "root.pub": "admin \(admin.publicKey.z85)\n",
            "README": "not a key", ".hidden.pub": "garbage",
        ])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (keys, problems) = try AuthorizedKeys.load(directory: path, strict: true)
        #expect(problems.isEmpty)
        #expect(keys.count == 2)
        #expect(keys[worker.publicKey.z85] == Principal(key: worker.publicKey.z85, name: "builder-1", role: .worker))
        #expect(keys[admin.publicKey.z85]?.role == .admin)
        #expect(keys[admin.publicKey.z85]?.name == "root")
    }

    @Test func aBadFileStopsAStartButOnlySkipsItsLinesOnAReload() throws {
        let good = try CurveKeyPair.generate()
        let coordinator = try CurveKeyPair.generate()
        let path = try Self.directory([
            "good.pub": "client \(good.publicKey.z85)\n", "bad.pub": "client short\n",
            "coordinator.pub": "coordinator \(coordinator.publicKey.z85)\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: KeyFileError.self) { try AuthorizedKeys.load(directory: path, strict: true) }
        #expect(error?.origin.contains("bad.pub") == true)
        let (keys, problems) = try AuthorizedKeys.load(directory: path, strict: false)
        #expect(keys.count == 1)
        #expect(keys[good.publicKey.z85]?.role == .client)
        #expect(problems.count == 2)
        #expect(problems.contains { $0.message.contains("cannot be authorised") })
    }

    @Test func theRingAdmitsOnlyListedKeysUnderTheirKey() throws {
        let known = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let path = try Self.directory(["k.pub": "client \(known.publicKey.z85)\n"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ring = KeyRing(try AuthorizedKeys.load(directory: path, strict: true).keys)
        func request(_ key: CurvePublicKey) -> ZAPRequest {
            ZAPRequest(
                domain: "cohort", address: "127.0.0.1", routingID: [], mechanism: "CURVE", credentials: [key.bytes])
        }
        #expect(ring.decide(request(known.publicKey), admitsUnknownKeys: false) == .allow(userID: known.publicKey.z85))
        #expect(ring.decide(request(stranger.publicKey), admitsUnknownKeys: false) == .deny(reason: "unknown key"))
        // Admitting unknown keys (for attempt tokens) admits them under their own key: the loop
        // then gives them no permission but what a valid attempt token lends.
        #expect(
            ring.decide(request(stranger.publicKey), admitsUnknownKeys: true) == .allow(userID: stranger.publicKey.z85))
        ring.replace(with: AuthorizedKeys())
        #expect(ring.decide(request(known.publicKey), admitsUnknownKeys: false) == .deny(reason: "unknown key"))
    }

    @Test func onlyLoopbackEndpointsCountAsPrivate() {
        func exposed(_ endpoint: String) -> Bool { CoordinatorConfiguration(endpoint: endpoint).listensBeyondLoopback }
        #expect(!exposed("tcp://127.0.0.1:7400"))
        #expect(!exposed("tcp://localhost:*"))
        #expect(!exposed("tcp://[::1]:7400"))
        #expect(!exposed("ipc:///tmp/cohort.sock"))
        #expect(exposed("tcp://0.0.0.0:7400"))
        #expect(exposed("tcp://10.1.2.3:7400"))
        #expect(exposed("tcp://*:7400"))
    }
}

@Suite struct LimitSettingsTests {
    @Test func maxMessageSizeMustLeaveRoomForMaxFrameSizeAndDefaultsToTwiceIt() throws {
        var configuration = CoordinatorConfiguration()
        configuration.maxFrameSize = 8192
        #expect(configuration.effectiveMaxMessageSize == 16384)
        configuration.maxMessageSize = 8192
        let error = #expect(throws: CoordinatorConfigurationError.self) { try configuration.validate() }
        #expect(error?.setting == "maxMessageSize")
        configuration.maxMessageSize = 8192 + 64
        try configuration.validate()
    }

    @Test func maxOutputBytesHasAFloor() {
        var configuration = CoordinatorConfiguration()
        configuration.maxOutputBytes = 100
        let error = #expect(throws: CoordinatorConfigurationError.self) { try configuration.validate() }
        #expect(error?.setting == "maxOutputBytes")
    }
}

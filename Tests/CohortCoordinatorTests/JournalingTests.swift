import CohortCoordinator
import CohortJournal
import CohortWire
import Foundation
import Logging
import Testing

/// The coordinator and its journal: what a client is told is already on disk.
@Suite struct JournalingTests {
    func withStateDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cohort-coord-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(path)
    }

    /// Every SUBMITTED a client receives names a group the journal already holds, and
    /// every DISPATCH a worker receives an attempt the journal already holds.
    @Test func aGroupIDAndADispatchAreOnDiskBeforeTheyAreSent() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: { $0.stateDirectory = path }) { handle in
                let journalFile = path + "/journal.sqlite"
                let worker = try handle.worker("w1")
                let client = try handle.client()
                for index in 0..<5 {
                    guard case .submitted(let receipt) = try client.submit("name: g\(index)\nchildren:\n  - { name: a, run: echo }\n")
                    else {
                        Issue.record("not submitted")
                        return
                    }
                    // Read by another connection, as a crash right now would leave it.
                    let journal = try Journal.openExisting(at: journalFile)
                    defer { journal.close() }
                    let contents = try journal.load()
                    #expect(contents.groups.contains { $0.id == receipt.id })
                    guard case .toWorker(.dispatch(let tasks))? = try worker.receive(timeout: Deadline.event) else {
                        Issue.record("no dispatch")
                        return
                    }
                    let group = try #require(try journal.load().groups.first { $0.id == receipt.id })
                    for task in tasks {
                        #expect(group.children.contains { $0.taskID == task.task.id && $0.state == .inFlight })
                    }
                }
            }
        }
    }

    /// The fencing counter of a category is on disk with the dispatch that carries its token.
    @Test func fencingCountersAreJournaledWithTheirDispatch() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: { $0.stateDirectory = path }) { handle in
                let worker = try handle.worker("w1")
                let client = try handle.client()
                _ = try client.submit("name: locked\nchildren:\n  - { name: a, run: echo, exclusive: [db] }\n")
                guard case .toWorker(.dispatch(let tasks))? = try worker.receive(timeout: Deadline.event) else {
                    Issue.record("no dispatch")
                    return
                }
                let token = try #require(tasks.first?.fencingTokens["db"])
                let journal = try Journal.openExisting(at: path + "/journal.sqlite")
                defer { journal.close() }
                #expect(try journal.load().lastTokens["db"] == token)
                #expect(token > journal.epoch << 32)
            }
        }
    }

    /// Two coordinators cannot share a state directory; the second one's run() throws at once.
    @Test func aSecondCoordinatorOnTheStateDirectoryFails() async throws {
        try await withStateDirectory { path in
            try await withCoordinator(configure: { $0.stateDirectory = path }) { _ in
                var configuration = CoordinatorConfiguration(endpoint: "tcp://127.0.0.1:*")
                configuration.printsListeningLine = false
                configuration.stateDirectory = path
                let second = Coordinator(configuration: configuration, logger: Logger(label: "test.second"))
                let error = await #expect(throws: JournalError.self) { try await second.run() }
                #expect(error?.code == .locked)
            }
        }
    }
}

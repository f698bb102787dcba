import CohortPeerSupport
import CohortSpec
import CohortTestSupport
import CohortWire
import Foundation
import Testing

@testable import CohortWorker

@Suite(.timeLimit(.minutes(1)))
struct ClusterLockTests {
    /// A kind that runs a local group whose one child is `MutuallyExclusive` on `printer`,
    /// and returns the fencing token the child was granted.
    static func printing(ran: Locked<Bool>) -> ProcedureRegistry {
        var registry = ProcedureRegistry()
        registry.register("print") { (_: JSONValue, context: ProcedureContext) -> JSONValue in
            let child = BlockProcedure { ran.value = true }
            child.addCondition(MutuallyExclusive(category: "printer"))
            try await context.run(GroupProcedure(children: [child]))
            return ["token": .int(Int64(child.fencingTokens["printer"] ?? 0))]
        }
        return registry
    }

    static func lockRequest(_ harness: WorkerHarness) async throws -> LockRequest {
        try await harness.coordinator.workerMessage("a lock request") {
            if case .lockRequest(let r) = $0 { r } else { nil }
        }
    }

    @Test func localMutuallyExclusiveChildWaitsForTheCoordinatorsGrant() async throws {
        let ran = Locked(false)
        try await WorkerHarness.run(registry: Self.printing(ran: ran)) { harness async throws in
            let task = harness.dispatch("print", "{}", id: 11, path: "docs/print", attempt: 2)
            let request = try await Self.lockRequest(harness)
            #expect(request.ref == task)
            #expect(request.categories == ["printer"])
            #expect(!ran.value, "the child ran before its lock was granted")
            harness.coordinator.send(.lockGrant(LockGrant(requestID: request.requestID, tokens: ["printer": 42])))
            #expect(try await harness.output(11) == ["token": 42])
            #expect(ran.value)
            let released = try await harness.coordinator.workerMessage("the release") {
                if case .lockRelease(let id) = $0 { id } else { nil }
            }
            #expect(released == request.requestID)
        }
    }

    @Test func categoryTheAttemptHoldsIsNotAskedForAgain() async throws {
        let ran = Locked(false)
        try await WorkerHarness.run(registry: Self.printing(ran: ran)) { harness async throws in
            // The child's `exclusive: [printer]` was granted before dispatch: asking the
            // coordinator again would wait behind the attempt's own grant for ever.
            harness.dispatch("print", "{}", id: 1, fencingTokens: ["printer": 8])
            #expect(try await harness.output(1) == ["token": 8])
            #expect(
                !harness.coordinator.inbox.contains {
                    if case .worker(.lockRequest) = $0.message { true } else { false }
                })
        }
    }

    /// A category the attempt runs under only through its group's hold (in its tokens, not in
    /// `holds`) is asked of the coordinator: siblings that declare it must still be excluded.
    @Test func aCategoryOnlyTheGroupHoldsIsAskedOfTheCoordinator() async throws {
        let ran = Locked(false)
        try await WorkerHarness.run(registry: Self.printing(ran: ran)) { harness async throws in
            harness.dispatch("print", "{}", id: 1, fencingTokens: ["printer": 8], holds: [])
            let request = try await Self.lockRequest(harness)
            #expect(request.categories == ["printer"])
            #expect(!ran.value)
            harness.coordinator.send(.lockGrant(LockGrant(requestID: request.requestID, tokens: ["printer": 9])))
            #expect(try await harness.output(1) == ["token": 9])
        }
    }

    /// Issue 12, item 2: a procedure inside a local group that holds a cluster lock may not
    /// wait for another (hold-and-wait could deadlock with a group doing the reverse): it is
    /// refused on the worker, naming the group and what it holds, and never asked for.
    @Test func aLockAskedForInsideAHoldingGroupIsRefused() async throws {
        var registry = ProcedureRegistry()
        registry.register("nested") { (_: JSONValue, context: ProcedureContext) -> JSONValue in
            let inner = BlockProcedure {}
            inner.addCondition(MutuallyExclusive(category: "q"))
            let outer = GroupProcedure(children: [inner])
            outer.name = "outer"
            outer.addCondition(MutuallyExclusive(category: "p"))
            try await context.run(outer)
            return [:]
        }
        try await WorkerHarness.run(registry: registry) { harness async throws in
            harness.dispatch("nested", "{}", id: 3)
            let request = try await Self.lockRequest(harness)
            #expect(request.categories == ["p"])
            harness.coordinator.send(.lockGrant(LockGrant(requestID: request.requestID, tokens: ["p": 4])))
            let result = try await harness.coordinator.result(3)
            guard case .failed(let error) = result.outcome else {
                Issue.record("expected a failure, got \(result.outcome)")
                return
            }
            #expect(error.contains("inside outer, which holds p"), "\(error)")
            #expect(
                !harness.coordinator.inbox.contains {
                    if case .worker(.lockRequest(let request)) = $0.message {
                        request.categories == ["q"]
                    } else {
                        false
                    }
                })
        }
    }

    @Test func mixedRequestAsksTheCoordinatorOnlyForWhatTheAttemptLacks() async throws {
        var registry = ProcedureRegistry()
        registry.register("copy") { (_: JSONValue, context: ProcedureContext) -> JSONValue in
            let first = BlockProcedure {}
            first.addCondition(MutuallyExclusive(categories: ["printer", "paper"]))
            let second = BlockProcedure {}
            second.addCondition(MutuallyExclusive(category: "printer"))
            second.addDependency(first)
            try await context.run(GroupProcedure(children: [first, second]))
            return [
                "first": .object(first.fencingTokens.mapValues { .int(Int64($0)) }),
                "second": .object(second.fencingTokens.mapValues { .int(Int64($0)) }),
            ]
        }
        try await WorkerHarness.run(registry: registry) { harness async throws in
            let task = harness.dispatch("copy", "{}", id: 2, fencingTokens: ["printer": 8])
            let request = try await Self.lockRequest(harness)
            #expect(request.categories == ["paper"])
            #expect(request.ref == task)
            harness.coordinator.send(.lockGrant(LockGrant(requestID: request.requestID, tokens: ["paper": 5])))
            #expect(try await harness.output(2) == ["first": ["printer": 8, "paper": 5], "second": ["printer": 8]])
        }
    }

    @Test func deniedLockFailsTheAttemptWithTheCoordinatorsReason() async throws {
        let ran = Locked(false)
        try await WorkerHarness.run(registry: Self.printing(ran: ran)) { harness async throws in
            harness.dispatch("print", "{}", id: 1)
            let request = try await Self.lockRequest(harness)
            harness.coordinator.send(
                .lockDenied(
                    LockDenial(
                        requestID: request.requestID, kind: .denied, reason: "category printer is forbidden here")))
            let result = try await harness.coordinator.result(1)
            guard case .failed(let error) = result.outcome else {
                Issue.record("expected a failure, got \(result.outcome)")
                return
            }
            #expect(error.contains("lock on printer refused: category printer is forbidden here"))
            #expect(!ran.value)
        }
    }

    @Test func cancelledAttemptWithdrawsItsWaitingLockRequest() async throws {
        let ran = Locked(false)
        try await WorkerHarness.run(registry: Self.printing(ran: ran)) { harness async throws in
            let task = harness.dispatch("print", "{}", id: 1)
            let request = try await Self.lockRequest(harness)
            harness.coordinator.send(.cancel([AttemptCancellation(ref: task, reason: "cancelled by client")]))
            let withdrawn = try await harness.coordinator.workerMessage("the withdrawal") {
                if case .lockWithdraw(let id) = $0 { id } else { nil }
            }
            #expect(withdrawn == request.requestID)
            #expect(try await harness.coordinator.result(1).outcome == .cancelled(reason: "cancelled by client"))
            #expect(!ran.value)
        }
    }

    @Test func aGrantThatCrossesAWithdrawalIsGivenBack() {
        let sent = Locked<[LockMessage]>([])
        let manager = ClusterExclusivityManager(logger: .init(label: "test")) { message in
            sent.mutate { $0.append(message) }
        }
        let attempt = WireAttemptRef(id: 1, group: "g", path: "p", attempt: 1)
        let outcome = Locked<[ExclusivityGrant?]>([])
        let id = manager.request(["a", "b"], for: BlockProcedure {}, attempt: attempt) { grant in
            outcome.mutate { $0.append(grant) }
        }
        manager.withdraw(id)
        manager.granted(LockGrant(requestID: id.rawValue, tokens: ["a": 1, "b": 1]))
        #expect(
            sent.value == [
                .request(LockRequest(requestID: id.rawValue, ref: attempt, categories: ["a", "b"])),
                .withdraw(requestID: id.rawValue),
                .release(requestID: id.rawValue),
            ])
        #expect(outcome.value == [nil])
    }

    @Test func revokedGrantCancelsItsHolder() {
        let manager = ClusterExclusivityManager(logger: .init(label: "test")) { _ in }
        let holder = BlockProcedure {}
        let id = manager.request(["db"], for: holder, attempt: WireAttemptRef(id: 1, group: "g", path: "p", attempt: 1))
        { _ in }
        manager.granted(LockGrant(requestID: id.rawValue, tokens: ["db": 5]))
        #expect(manager.heldTokens(of: 1) == ["db": 5])
        manager.denied(LockDenial(requestID: id.rawValue, kind: .revoked, reason: "worker lost"))
        #expect(holder.isCancelled)
        #expect("\(holder.cancellationReason!)" == "lock on db revoked: worker lost")
        #expect(manager.heldTokens(of: 1).isEmpty)
    }

    @Test func procedureOutsideAnyAttemptIsCancelledInsteadOfWaiting() {
        let sent = Locked<[LockMessage]>([])
        let manager = ClusterExclusivityManager(logger: .init(label: "test")) { message in
            sent.mutate { $0.append(message) }
        }
        let stray = BlockProcedure {}
        let granted = Locked<[ExclusivityGrant?]>([])
        _ = manager.request(["db"], for: stray) { grant in granted.mutate { $0.append(grant) } }
        #expect(stray.isCancelled)
        #expect(granted.value == [nil])
        #expect(sent.value.isEmpty)
    }

    @Test func outstandingRequestsAreKeptForTheNextSession() {
        let manager = ClusterExclusivityManager(logger: .init(label: "test")) { _ in }
        let attempt = WireAttemptRef(id: 7, group: "g", path: "p", attempt: 1)
        let first = manager.request(["a"], for: BlockProcedure {}, attempt: attempt) { _ in }
        let second = manager.request(["b"], for: BlockProcedure {}, attempt: attempt) { _ in }
        manager.granted(LockGrant(requestID: first.rawValue, tokens: ["a": 3]))
        #expect(
            manager.outstandingRequests() == [LockRequest(requestID: second.rawValue, ref: attempt, categories: ["b"])])
        #expect(manager.heldTokens(of: 7) == ["a": 3])
    }
}

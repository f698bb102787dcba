import Testing

@testable import CohortCore

@Suite struct MembershipTests {
    private func record(_ id: UInt64, now: Timestamp) -> WorkerRecord {
        WorkerRecord(id: SessionID(id), name: "w\(id)", host: "h", labels: ["a"], kinds: ["echo"], slots: 2, now: now)
    }

    @Test func aWorkerIsLostOnlyAfterLivenessSilentIntervals() {
        var membership = Membership(heartbeatInterval: .seconds(1), liveness: 3)
        membership.join(record(1, now: .zero))
        #expect(membership.expired(now: .zero + .seconds(3)).isEmpty)
        #expect(membership.expired(now: .zero + .milliseconds(3001)) == [SessionID(1)])
        membership.heard(SessionID(1), now: .zero + .seconds(2))
        #expect(membership.expired(now: .zero + .milliseconds(4500)).isEmpty)
        #expect(membership.nextExpiry() == .zero + .seconds(5))
    }

    @Test func removedWorkersAreRememberedAsLostWithinTheRetention() {
        var membership = Membership()
        membership.departedRetention = 2
        for id in 1...3 as ClosedRange<UInt64> {
            membership.join(record(id, now: .zero))
            membership.remove(SessionID(id))
        }
        #expect(membership.departed.map(\.id) == [SessionID(2), SessionID(3)])
        #expect(membership.departed.allSatisfy { $0.state == .lost })
    }

    @Test func offersNeedsTheKindAndEveryLabel() {
        let worker = WorkerRecord(
            id: SessionID(1), name: "w", host: "h", labels: ["linux", "gpu"], kinds: ["shell"], slots: 1, now: .zero)
        #expect(worker.offers(kind: "shell", labels: ["gpu"]))
        #expect(worker.offers(kind: "shell", labels: []))
        #expect(!worker.offers(kind: "shell", labels: ["gpu", "arm"]))
        #expect(!worker.offers(kind: "echo", labels: []))
    }

    @Test func aSecondReadyOfTheSameSessionKeepsItsAttemptsInFlight() {
        var membership = Membership()
        membership.join(record(1, now: .zero))
        membership.addInFlight(3, to: SessionID(1))
        var updated = record(1, now: .zero + .seconds(5))
        updated.slots = 8
        membership.join(updated)
        #expect(membership.workers[SessionID(1)]?.inFlight == 3)
        #expect(membership.workers[SessionID(1)]?.slots == 8)
    }
}

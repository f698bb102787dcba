import CohortTestSupport
import Testing

@testable import Procedures

@Suite("LocalExclusivityManager")
struct LocalExclusivityManagerTests {
    let manager = LocalExclusivityManager()
    let owner = TestProcedure("owner")

    @Test func freeCategoryCompletesAtOnce() {
        let grants = Locked<[ExclusivityGrant?]>([])
        _ = manager.request(["db"], for: owner) { grant in grants.mutate { $0.append(grant) } }
        #expect(grants.value == [ExclusivityGrant(fencingTokens: ["db": 1])])
    }

    @Test func waiterCompletesWhenTheHolderReleases() {
        let second = Locked<[ExclusivityGrant?]>([])
        let first = manager.request(["db"], for: owner) { _ in }
        let waiting = manager.request(["db"], for: owner) { grant in second.mutate { $0.append(grant) } }
        #expect(second.value.isEmpty)
        #expect(manager.snapshot()["db"]?.holder == first)
        #expect(manager.snapshot()["db"]?.waiters == [waiting])
        manager.release(first)
        #expect(second.value == [ExclusivityGrant(fencingTokens: ["db": 2])])
        #expect(manager.snapshot()["db"]?.holder == waiting)
    }

    @Test func withdrawnWaiterCompletesWithNilAndLeavesTheHolderAlone() {
        let results = Locked<[String]>([])
        let holder = manager.request(["db"], for: owner) { _ in }
        let b = manager.request(["db"], for: owner) { grant in results.mutate { $0.append("b:\(grant != nil)") } }
        let c = manager.request(["db"], for: owner) { grant in results.mutate { $0.append("c:\(grant != nil)") } }
        manager.withdraw(b)
        #expect(results.value == ["b:false"])
        #expect(manager.snapshot()["db"]?.holder == holder)
        #expect(manager.snapshot()["db"]?.waiters == [c])
        manager.release(holder)
        #expect(results.value == ["b:false", "c:true"])
    }

    @Test func withdrawingAGrantedRequestReleasesIt() {
        let granted = manager.request(["db"], for: owner) { _ in }
        let next = Locked(false)
        _ = manager.request(["db"], for: owner) { grant in next.value = grant != nil }
        manager.withdraw(granted)
        #expect(next.value)
    }

    @Test func releasingTwiceOrAnUnknownRequestDoesNothing() {
        let first = manager.request(["db"], for: owner) { _ in }
        manager.release(first)
        let second = manager.request(["db"], for: owner) { _ in }
        manager.release(first)
        manager.release(ExclusivityRequestID(999))
        #expect(manager.snapshot()["db"]?.holder == second)
    }

    @Test func requestIDsAreDistinct() {
        let ids = (0..<10).map { _ in manager.request(["c\(Int.random(in: 0..<3))"], for: owner) { _ in } }
        #expect(Set(ids).count == 10)
        #expect(ids[0].description.hasPrefix("lock-request-"))
    }
}

import CohortCore
import CohortWire
import Testing

@testable import CohortCoordinator

/// Attempt tokens (docs/security.md, "Attempt tokens"): random, at least 128 bits, valid only
/// while their attempt runs, for their own group's requests only.
@Suite struct AttemptTokenTests {
    let ref = AttemptRef(id: AttemptID(7), group: "g-1", path: "deploy/check", attempt: 2)

    @Test func tokensAreRandomAndAtLeast128Bits() {
        var tokens = AttemptTokens()
        var seen = Set<String>()
        // 1,000 tokens draw the random pool (256 tokens a fill) four times: a fill that left
        // the pool as it was would repeat tokens.
        var digits: [Character: Int] = [:]
        for index in 0..<1000 {
            let token = tokens.mint(for: ref) { $0 }
            #expect(token.count == 32, "128 bits as hex: \(token)")
            #expect(token.allSatisfy { $0.isHexDigit })
            seen.insert(token)
            #expect(seen.count == index + 1, "no token repeats")
            for digit in token { digits[digit, default: 0] += 1 }
        }
        // 32,000 digits, about 2,000 of each of the 16: none missing or far off (a pool filled
        // only in part, or with zeros, would be).
        #expect(digits.count == 16)
        #expect(digits.values.allSatisfy { (1600...2400).contains($0) }, "\(digits)")
    }

    @Test func aTokenIsValidOnlyWhileItsAttemptRuns() {
        var tokens = AttemptTokens()
        let token = tokens.mint(for: ref) { $0 }
        #expect(tokens.holder(of: token) { _ in true } == .success(ref))
        #expect(tokens.holder(of: token) { _ in false } == .failure(.ended(ref)))
        #expect(tokens.holder(of: "0123456789abcdef0123456789abcdef") { _ in true } == .failure(.unknown))
        #expect(TokenRefusal.ended(ref).text.contains("g-1/deploy/check (attempt 2) is no longer valid"))
        #expect(TokenRefusal.otherGroup(ref, requested: "g-2").text.contains("valid only for group g-1, not g-2"))
    }

    @Test func tokensOfEndedAttemptsAreSweptAsTheTableGrows() {
        var tokens = AttemptTokens()
        let first = tokens.mint(for: ref) { $0 }
        for attempt in 0..<1100 {
            let other = AttemptRef(id: AttemptID(UInt64(100 + attempt)), group: "g-1", path: "x", attempt: 1)
            _ = tokens.mint(for: other) { $0.filter { $0.value.id.rawValue % 2 == 0 } }
        }
        #expect(tokens.count < 1101, "ended attempts' tokens were forgotten: \(tokens.count)")
        #expect(tokens.holder(of: first) { _ in true } == .failure(.unknown), "its attempt (odd id) had ended")
    }

    @Test func onlyRequestsAboutOneGroupCarryAToken() {
        #expect(ClientRequest.Kind.cancel(group: "g", path: nil, reason: "").tokenGroup == "g")
        #expect(
            ClientRequest.Kind.addChildren(group: "g", ChildrenAddition(document: "[]", format: .json)).tokenGroup
                == "g")
        #expect(ClientRequest.Kind.status(group: "g").tokenGroup == "g")
        #expect(ClientRequest.Kind.status(group: nil).tokenGroup == nil, "the list of every group is not one group")
        #expect(ClientRequest.Kind.workers.tokenGroup == nil)
        #expect(ClientRequest.Kind.submit(Submission(document: "", format: .yaml)).tokenGroup == nil)
    }

    @Test func aChildsCancelNamesIt() {
        let reason = CancellationReason.cancelledByChild(path: "deploy/check", attempt: 1, reason: "rollback")
        #expect(reason.text == "cancelled by child deploy/check (attempt 1): rollback")
        #expect(reason.code == .cancelledByChild)
        #expect(
            CancellationReason.cancelledByChild(path: "a", attempt: 3, reason: "").text
                == "cancelled by child a (attempt 3)")
    }
}

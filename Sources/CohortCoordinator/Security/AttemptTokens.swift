import CohortCore
import CohortWire

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// The attempt tokens the coordinator handed out: a random secret per dispatched attempt,
/// given to the attempt as `COHORT_ATTEMPT_TOKEN`, that lets whoever holds it — while that
/// attempt runs — read its group, cancel its group and add children to it (docs/security.md,
/// "Attempt tokens").
///
/// A token is minted when its attempt is dispatched and is valid only while the scheduler
/// still runs that attempt (``Scheduler/isRunning(_:)``); a token whose attempt ended is
/// forgotten at the next sweep (amortised over minting). Tokens live in memory only: after a
/// coordinator restart the tokens of attempts still running are unknown (a documented limit).
///
/// Not thread-safe: owned by the loop thread.
struct AttemptTokens {
    /// Token → the attempt it was minted for.
    private var byToken: [String: AttemptRef] = [:]
    /// How many tokens there were after the last sweep; the next sweeps when they doubled.
    private var sweptAt = 0

    var count: Int { byToken.count }

    /// A fresh token for `ref`: 128 random bits from the system's generator, as 32 hex digits.
    /// Sweeps the tokens of attempts that ended once the table has doubled since the last sweep:
    /// `running` gets every token and returns those whose attempts still run, in one call (the
    /// coordinator answers it with ``Scheduler/running(_:)``; a closure called once per token
    /// copied the whole scheduler each time, about one copy per dispatch, profiled).
    mutating func mint(
        for ref: AttemptRef, running: ([String: AttemptRef]) -> [String: AttemptRef]
    ) -> String {
        if byToken.count >= max(1024, 2 * sweptAt) {
            byToken = running(byToken)
            sweptAt = byToken.count
        }
        let token = randomness.token()
        byToken[token] = ref
        return token
    }

    /// The system's random bytes, drawn 4 KiB at a time (one system call per 256 tokens, not
    /// two per token: minting is on the dispatch path of every child).
    private var randomness = RandomBytes()

    /// The attempt `token` was minted for, if it still runs; why not otherwise (the words of a
    /// refusal: "an unknown or forged attempt token", "the attempt token of … which has ended").
    func holder(of token: String, isRunning: (AttemptRef) -> Bool) -> Result<AttemptRef, TokenRefusal> {
        guard let ref = byToken[token] else { return .failure(.unknown) }
        guard isRunning(ref) else { return .failure(.ended(ref)) }
        return .success(ref)
    }

}

/// Tokens from the system's cryptographic generator (/dev/urandom on Linux, the kernel's
/// CSPRNG that getrandom also reads; arc4random_buf on Darwin), drawn 4 KiB at a time and
/// written as hex without formatting. Each byte is used once. `SystemRandomNumberGenerator`
/// makes a system call per 64 bits, two per token, on the dispatch path of every child.
struct RandomBytes {
    private var pool = [UInt64](repeating: 0, count: 512)
    private var next = 512

    /// 128 fresh random bits as 32 lowercase hex digits.
    mutating func token() -> String {
        Self.hex(word(), word())
    }

    private mutating func word() -> UInt64 {
        if next == pool.count {
            Self.fill(&pool)
            next = 0
        }
        defer { next += 1 }
        return pool[next]
    }

    #if canImport(Glibc)
        /// Opened once, for the process's life (close-on-exec: children never inherit it).
        private static let urandom = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
    #endif

    private static func fill(_ pool: inout [UInt64]) {
        #if canImport(Glibc)
            let complete = pool.withUnsafeMutableBytes { buffer in
                var filled = 0
                while urandom >= 0, filled < buffer.count {
                    let count = read(urandom, buffer.baseAddress! + filled, buffer.count - filled)
                    if count > 0 {
                        filled += count
                    } else if count == 0 || errno != EINTR {
                        break
                    }
                }
                return filled == buffer.count
            }
            // Without /dev/urandom (a bare chroot), the standard library's generator: the same
            // source through getrandom, a call per word.
            if !complete {
                var generator = SystemRandomNumberGenerator()
                for index in pool.indices { pool[index] = generator.next() }
            }
        #else
            pool.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        #endif
    }

    private static func hex(_ high: UInt64, _ low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            let digits: StaticString = "0123456789abcdef"
            for index in 0..<32 {
                let word = index < 16 ? high : low
                let shift = UInt64(60 - 4 * (index % 16))
                buffer[index] = digits.utf8Start[Int((word >> shift) & 0xF)]
            }
            return 32
        }
    }
}

/// Why an attempt token lets nothing through.
enum TokenRefusal: Error, Equatable {
    /// No attempt has this token: it was never minted here (forged, mistyped), or it was
    /// minted by an earlier incarnation of the coordinator.
    case unknown
    /// Its attempt ended (finished, was cancelled or superseded).
    case ended(AttemptRef)
    /// Valid, but for another group than the request names.
    case otherGroup(AttemptRef, requested: String)
    /// Valid, but the request is not one a token allows.
    case notAllowed(AttemptRef, doing: String)

    /// The refusal's words, after `permission denied: `.
    var text: String {
        switch self {
        case .unknown:
            "the attempt token is unknown (forged, or from before a coordinator restart)"
        case .ended(let ref):
            "the attempt token of \(ref.group)/\(ref.path) (attempt \(ref.attempt)) is no longer valid: that attempt has ended"
        case .otherGroup(let ref, let requested):
            "the attempt token of \(ref.group)/\(ref.path) (attempt \(ref.attempt)) is valid only for group \(ref.group), not \(requested)"
        case .notAllowed(let ref, let doing):
            "the attempt token of \(ref.group)/\(ref.path) (attempt \(ref.attempt)) may only read, cancel or add children to its own group, not \(doing)"
        }
    }
}

extension ClientRequest.Kind {
    /// The group a request an attempt token may let through names: status, result, watch,
    /// unwatch, cancel and addChildren of one group. `nil` for every other request.
    var tokenGroup: String? {
        switch self {
        case .status(let group?, _), .result(let group, _), .watch(let group), .unwatch(let group),
            .cancel(let group, _, _), .addChildren(let group, _):
            group
        case .logs(let query): query.group
        default: nil
        }
    }
}

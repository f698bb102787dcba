import CohortWire

/// What a CURVE key may do, as its role in the authorised-keys directory says.
///
/// | role   | register | submit | cancel own | cancel any | read | drain |
/// |--------|----------|--------|------------|------------|------|-------|
/// | worker | yes      |        |            |            |      |       |
/// | client |          | yes    | yes        |            | yes  |       |
/// | admin  | yes      | yes    | yes        | yes        | yes  | yes   |
///
/// docs/security.md has the same table; keep them together.
public enum Role: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Registers as a worker (HELLO as worker) and runs what it is sent; nothing else.
    case worker
    /// Submits groups, cancels its own, reads status, results, workers and locks.
    case client
    /// Everything, including cancelling any group and draining workers.
    case admin

    /// The permissions the role grants.
    public var permissions: Set<Permission> {
        switch self {
        case .worker: [.register]
        case .client: [.submit, .cancel, .read]
        case .admin: Set(Permission.allCases)
        }
    }

    public var description: String { rawValue }
}

/// One thing a peer may be allowed to do. The raw value is the name refusals and docs use.
public enum Permission: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Say HELLO as a worker and send worker messages (ready, started, results, locks…).
    case register
    /// Submit groups.
    case submit
    /// Cancel groups (or their children) the key submitted itself.
    case cancel
    /// Cancel any group, whoever submitted it.
    case cancelAny = "cancel-any"
    /// Status, results, watches, workers and locks.
    case read
    /// Drain workers (stop sending them work) and undrain them.
    case drain

    public var description: String { rawValue }
}

/// Who sent a message: the authorised key it came with (CURVE on), or nobody in particular
/// (CURVE off: every peer may do everything, as before security existed).
struct Principal: Hashable, Sendable {
    /// The key's Z85 text; `nil` without CURVE.
    var key: String?
    /// The key's name (from its entry), for logs and refusals.
    var name: String
    var role: Role
    /// A key that is not among the authorised keys (docs/security.md, "Attempt tokens"): it
    /// may do nothing by itself; its requests go through only with a valid attempt token.
    var tokenOnly = false

    /// A peer of a coordinator without CURVE.
    static let anonymous = Principal(key: nil, name: "anonymous", role: .admin)

    /// A CURVE key the coordinator does not know (an attempt's ephemeral key).
    static func unauthorised(_ key: String) -> Principal {
        Principal(key: key, name: "unauthorised key \(key.prefix(8))…", role: .client, tokenOnly: true)
    }

    func may(_ permission: Permission) -> Bool { !tokenOnly && role.permissions.contains(permission) }

    /// `key "ci-runner" (role client) lacks permission "submit"`.
    func refusal(_ permission: Permission, _ doing: String) -> String {
        if tokenOnly {
            return "permission denied: this key is not among the coordinator's authorised keys, so it may not "
                + "\(doing); without an authorised key only a running child's attempt token (COHORT_ATTEMPT_TOKEN) "
                + "lets a request through, to read, cancel or add children to that child's own group"
        }
        return "permission denied: key \"\(name)\" (role \(role)) lacks permission \"\(permission)\" needed to \(doing)"
    }
}

/// The permission each client request needs; `cancel` is refined by the group's owner.
enum RequestPolicy {
    static func permission(for kind: ClientRequest.Kind) -> (Permission, String)? {
        switch kind {
        case .submit: (.submit, "submit a group")
        case .rerun: (.submit, "re-run a group")
        case .status, .result, .watch, .unwatch: (.read, "read groups")
        case .logs: (.read, "read logs")
        case .workers: (.read, "list workers")
        case .locks: (.read, "list locks")
        case .cancel: (.cancel, "cancel a group")
        case .drain: (.drain, "drain a worker")
        case .undrain: (.drain, "undrain a worker")
        case .addChildren: (.submit, "add children to a group")
        case .disconnect: nil
        }
    }

    /// Whether `principal` may cancel a group whose owner is `owner` (`nil`: submitted
    /// without CURVE, or unknown): its own with `cancel`, any with `cancel-any`.
    static func mayCancel(_ principal: Principal, owner: String?) -> Permission? {
        if principal.may(.cancelAny) { return nil }
        if principal.may(.cancel), let key = principal.key, key == owner { return nil }
        return principal.may(.cancel) ? .cancelAny : .cancel
    }

    /// Whether `principal` may add children to a group whose owner is `owner`: its own with
    /// `submit`, any with `cancel-any` (an admin).
    static func mayAdd(_ principal: Principal, owner: String?) -> Permission? {
        if principal.may(.cancelAny) { return nil }
        if principal.may(.submit), let key = principal.key, key == owner { return nil }
        return principal.may(.submit) ? .cancelAny : .submit
    }
}

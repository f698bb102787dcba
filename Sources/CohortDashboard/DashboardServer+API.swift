import CohortClient
import Foundation
import Hummingbird

import enum CohortSpec.JSONValue

extension DashboardServer {
    /// Who sent the request: the token its `Authorization: Bearer` header carries (or, with
    /// `queryToken`, its `token` query parameter: a browser's `EventSource` cannot send
    /// headers); `nil` without one (an anonymous reader).
    /// - Throws: ``APIError`` 401 for a header that is not a bearer token, or an unknown token.
    @discardableResult
    func identify(_ request: Request, queryToken: Bool = false) throws(APIError) -> AccessToken? {
        guard let header = request.headers[.authorization] else {
            guard queryToken, let secret = request.uri.queryParameters.get("token"), !secret.isEmpty else { return nil }
            guard let token = tokens.token(secret: secret) else {
                throw APIError(.unauthorized, "unauthorized", "unknown token")
            }
            return token
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APIError(.unauthorized, "unauthorized", "the Authorization header must be `Bearer TOKEN`")
        }
        guard let token = tokens.token(secret: parts[1].trimmingCharacters(in: .whitespaces)) else {
            throw APIError(.unauthorized, "unauthorized", "unknown token")
        }
        return token
    }

    /// The token of a request that reads; `nil` for an anonymous one, which may read unless
    /// ``readsNeedToken``.
    /// - Throws: ``APIError`` 401 as ``identify(_:queryToken:)``, and without a token when reads
    ///   need one.
    @discardableResult
    func reader(_ request: Request, queryToken: Bool = false) throws(APIError) -> AccessToken? {
        let token = try identify(request, queryToken: queryToken)
        if token == nil, readsNeedToken {
            throw APIError(
                .unauthorized, "unauthorized",
                "the coordinator runs under CURVE: reading needs a token too; send `Authorization: Bearer TOKEN` "
                    + "with a token of role viewer or admin")
        }
        return token
    }

    /// Whether a request's `Host` header (`authority`) names the server bound at `bound`: its
    /// address and port, or on a loopback address also `localhost`, `127.0.0.1` or `[::1]` with
    /// the port. On a wildcard address (`0.0.0.0`, `::`) any host with the port: there is no one
    /// name to check.
    static func hostAllowed(_ authority: String?, bound: DashboardAddress) -> Bool {
        guard let authority = authority?.lowercased(), !authority.isEmpty else { return false }
        var names: Set<String> = [bound.description.lowercased()]
        if bound.isLoopback {
            names.formUnion(["localhost:\(bound.port)", "127.0.0.1:\(bound.port)", "[::1]:\(bound.port)"])
        }
        if bound.port == 80 { names.formUnion(names.map { String($0.dropLast(3)) }) }
        if names.contains(authority) { return true }
        if ["0.0.0.0", "::", "*"].contains(bound.host) {
            return authority.hasSuffix(":\(bound.port)") || (bound.port == 80 && !authority.contains(":"))
        }
        return false
    }

    /// The token of a request that must `doing` something only `allowed` roles may do.
    func authorize(_ request: Request, _ doing: String, allowed: (DashboardRole) -> Bool) throws(APIError)
        -> AccessToken
    {
        guard let token = try identify(request) else {
            throw APIError(
                .unauthorized, "unauthorized",
                "a token is needed to \(doing): send `Authorization: Bearer TOKEN` with a token of role admin")
        }
        guard allowed(token.role) else {
            throw APIError(
                .forbidden, "forbidden",
                "token \"\(token.name)\" (role \(token.role)) may not \(doing): that needs role admin")
        }
        return token
    }

    func whoami(_ request: Request) throws(APIError) -> JSONValue {
        let token = try identify(request)
        let role = token?.role ?? .viewer
        return [
            "name": token.map { .string($0.name) } ?? .null, "role": .string(role.rawValue),
            "authenticated": .bool(token != nil), "tokenNeeded": .bool(readsNeedToken),
            "may": [
                "read": .bool(token != nil || !readsNeedToken), "cancel": .bool(role.mayCancel),
                "drain": .bool(role.mayDrain),
            ],
            "coordinator": .string(client.coordinatorID),
        ]
    }

    /// The most groups `/api/groups` answers at once: each listed group costs one detail
    /// request to the coordinator (for its progress).
    static let maxPageSize = 100
    /// The furthest `/api/groups` pages: the coordinator lists at most 10,000 groups.
    static let maxOffset = 9_900
    /// The most unfinished groups whose details the cluster stream and `/api/workers` read
    /// (the newest): their progress and the attempts they run.
    static let maxUnfinishedDetails = 50

    /// `GET /api/groups?state=running,failed&name=release-*&limit=50&offset=0`, newest first.
    ///
    /// The coordinator filters (states, the name glob of `cohort status --name`) and answers
    /// at most `offset + limit + 1` groups; only the page's groups are read in detail.
    func groups(_ request: Request) async throws(APIError) -> JSONValue {
        try reader(request)
        let query = request.uri.queryParameters
        var states: Set<GroupState> = []
        if let text = query.get("state") {
            for word in text.split(separator: ",") {
                let word = word.trimmingCharacters(in: .whitespaces).lowercased()
                if word.isEmpty { continue }
                guard let state = GroupState.allCases.first(where: { "\($0)" == word }) else {
                    throw APIError(
                        .badRequest, "bad_request",
                        "state \"\(word)\" is not one of \(GroupState.allCases.map { "\($0)" }.joined(separator: ", "))"
                    )
                }
                states.insert(state)
            }
        }
        let name = query.get("name").map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        let limit = try Self.integer(query.get("limit"), "limit", default: 50, range: 1...Self.maxPageSize)
        let offset = try Self.integer(query.get("offset"), "offset", default: 0, range: 0...Self.maxOffset)

        let filter = GroupFilter(states: states, nameGlob: name, limit: UInt32(offset + limit + 1))
        let matching: [GroupSummary]
        do throws(ClientError) {
            matching = try await client.status(filter: filter)
        } catch {
            // The coordinator refuses a glob it cannot read (a `[` without its `]`).
            if error.code == .rejected { throw APIError(.badRequest, "bad_request", "name: \(error.message)") }
            throw APIError(error)
        }
        let more = matching.count > offset + limit
        var lines: [JSONValue] = []
        for group in matching.dropFirst(offset).prefix(limit) {
            let detail = try? await client.status(group.id)
            lines.append(DashboardJSON.summary(group, detail: detail))
        }
        let unfinished = try await call { try await client.status(filter: Self.unfinishedFilter) }
        return [
            "groups": .array(lines), "total": more ? .null : .int(Int64(matching.count)), "more": .bool(more),
            "offset": .int(Int64(offset)), "limit": .int(Int64(limit)), "counts": Self.counts(unfinished),
        ]
    }

    /// The groups that have not finished: the coordinator answers them from memory, without
    /// reading its journal.
    static let unfinishedFilter = GroupFilter(states: [.pending, .running], limit: 0)

    /// How many of `groups` are in each unfinished state.
    static func counts(_ groups: [GroupSummary]) -> JSONValue {
        var counts: [String: JSONValue] = ["pending": .int(0), "running": .int(0)]
        for group in groups { counts["\(group.state)"] = .int((counts["\(group.state)"]?.int64Value ?? 0) + 1) }
        return .object(counts)
    }

    static func integer(_ text: String?, _ name: String, default value: Int, range: ClosedRange<Int>)
        throws(APIError) -> Int
    {
        guard let text else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw APIError(
                .badRequest, "bad_request",
                "\(name) must be a whole number from \(range.lowerBound)"
                    + (range.upperBound == Int.max ? " up" : " to \(range.upperBound)") + ", not \"\(text)\"")
        }
        return number
    }

    /// `GET /api/groups/ID/result?child=PATH`: the whole output of a finished child.
    func result(_ request: Request, group: String) async throws(APIError) -> JSONValue {
        try reader(request)
        let child = request.uri.queryParameters.get("child").flatMap { $0.isEmpty ? nil : $0 }
        let (outcome, truncated) = try await call { try await client.resultDetail(group, child: child) }
        switch outcome {
        case .succeeded(let output):
            return [
                "group": .string(group), "child": DashboardJSON.optional(child), "state": "succeeded",
                "output": output, "error": .null, "outputTruncated": .bool(truncated),
            ]
        case .failed(let error):
            return [
                "group": .string(group), "child": DashboardJSON.optional(child), "state": "failed", "output": .null,
                "error": .string(error), "outputTruncated": false,
            ]
        case .cancelled(let reason):
            return [
                "group": .string(group), "child": DashboardJSON.optional(child), "state": "cancelled",
                "output": .null, "error": .string(reason), "outputTruncated": false,
            ]
        }
    }

    /// `POST /api/groups/ID/cancel` with an optional JSON body `{"child": PATH, "reason": TEXT}`
    /// (or `?child=PATH`).
    func cancel(_ request: Request, group: String) async throws(APIError) -> JSONValue {
        var request = request
        let token = try authorize(request, "cancel groups", allowed: \.mayCancel)
        var child = request.uri.queryParameters.get("child").flatMap { $0.isEmpty ? nil : $0 }
        var reason = "cancelled from the dashboard by \(token.name)"
        if case .object(let fields)? = try await Self.body(&request) {
            if case .string(let text)? = fields["child"], !text.isEmpty { child = text }
            if case .string(let text)? = fields["reason"], !text.isEmpty { reason = text }
        }
        let finished = try await call { try await client.cancel(group, child: child, reason: reason) }
        logger.notice(
            "dashboard cancel",
            metadata: ["group.id": "\(group)", "child.path": "\(child ?? "")", "token.name": "\(token.name)"])
        // As `cohort cancel --json` (docs/cli.md): what had finished was not cancelled.
        guard let finished else {
            return ["accepted": true, "group": .string(group), "child": DashboardJSON.optional(child)]
        }
        return [
            "accepted": false, "group": .string(group), "child": DashboardJSON.optional(child),
            "alreadyFinished": .string("\(finished)"),
        ]
    }

    /// `POST /api/workers/NAME/drain`.
    func drain(_ request: Request, worker: String) async throws(APIError) -> JSONValue {
        let token = try authorize(request, "drain workers", allowed: \.mayDrain)
        try await call { try await client.drain(worker: worker) }
        logger.notice("dashboard drain", metadata: ["worker.name": "\(worker)", "token.name": "\(token.name)"])
        return ["drained": .string(worker)]
    }

    /// The request's JSON body, `nil` when empty.
    static func body(_ request: inout Request) async throws(APIError) -> JSONValue? {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: 64 * 1024)
        } catch {
            throw APIError(.contentTooLarge, "bad_request", "the body is over 64 KiB or could not be read")
        }
        let text = String(buffer: buffer)
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return nil }
        do {
            let value = try JSONValue(jsonData: Data(text.utf8))
            guard case .object = value else { throw APIError(.badRequest, "bad_request", "the body must be an object") }
            return value
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.badRequest, "bad_request", "the body is not JSON: \(error)")
        }
    }

    /// The workers, each with the attempts that run there (from the unfinished groups).
    func workersJSON(unfinished: [GroupDetail]? = nil) async throws(APIError) -> JSONValue {
        let workers = try await call { try await client.workers() }
        var attempts: [String: [JSONValue]] = [:]
        let details: [GroupDetail]
        if let unfinished {
            details = unfinished
        } else {
            details = await unfinishedGroups(try await call { try await client.status(filter: Self.unfinishedFilter) })
        }
        for group in details {
            for child in group.children where !child.isGroup && child.state == .running {
                guard let worker = child.worker else { continue }
                attempts[worker, default: []].append(
                    [
                        "group": .string(group.id), "groupName": .string(group.name), "child": .string(child.path),
                        "attempt": .int(Int64(child.attempt)), "startedAt": DashboardJSON.time(child.startedAt),
                    ])
            }
        }
        return [
            "workers": .array(
                workers.map { DashboardJSON.worker($0, attempts: attempts[$0.name] ?? attempts[$0.id] ?? []) })
        ]
    }

    /// The details of the newest ``maxUnfinishedDetails`` groups of `groups` that have not
    /// finished (one request each).
    func unfinishedGroups(_ groups: [GroupSummary]) async -> [GroupDetail] {
        var details: [GroupDetail] = []
        for group in groups.lazy.filter({ !$0.state.isFinished }).prefix(Self.maxUnfinishedDetails) {
            if let detail = try? await client.status(group.id) { details.append(detail) }
        }
        return details
    }

    func locksJSON() async throws(APIError) -> JSONValue {
        let locks = try await call { try await client.locks() }
        return ["locks": .array(locks.map(DashboardJSON.lock))]
    }
}

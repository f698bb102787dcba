import CohortClient
import Foundation
import Hummingbird

import enum CohortSpec.JSONValue

extension DashboardServer {
    /// Who sent the request: the token its `Authorization: Bearer` header carries; `nil`
    /// without one (an anonymous reader).
    /// - Throws: ``APIError`` 401 for a header that is not a bearer token, or an unknown token.
    @discardableResult
    func identify(_ request: Request) throws(APIError) -> AccessToken? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APIError(.unauthorized, "unauthorized", "the Authorization header must be `Bearer TOKEN`")
        }
        guard let token = tokens.token(secret: parts[1].trimmingCharacters(in: .whitespaces)) else {
            throw APIError(.unauthorized, "unauthorized", "unknown token")
        }
        return token
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
            "authenticated": .bool(token != nil),
            "may": ["read": true, "cancel": .bool(role.mayCancel), "drain": .bool(role.mayDrain)],
            "coordinator": .string(client.coordinatorID),
        ]
    }

    /// `GET /api/groups?state=running,failed&name=release&limit=50&offset=0`, newest first.
    func groups(_ request: Request) async throws(APIError) -> JSONValue {
        try identify(request)
        let query = request.uri.queryParameters
        let states: Set<String>? = query.get("state").flatMap { text in
            let words = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                .filter { !$0.isEmpty }
            return words.isEmpty ? nil : Set(words)
        }
        if let states {
            let known = Set(GroupState.allCases.map { "\($0)" })
            if let unknown = states.first(where: { !known.contains($0) }) {
                throw APIError(
                    .badRequest, "bad_request",
                    "state \"\(unknown)\" is not one of \(GroupState.allCases.map { "\($0)" }.joined(separator: ", "))"
                )
            }
        }
        let name = query.get("name").map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        let limit = try Self.integer(query.get("limit"), "limit", default: 50, range: 1...1000)
        let offset = try Self.integer(query.get("offset"), "offset", default: 0, range: 0...Int.max)

        let all = try await call { try await client.status() }
        let matching = all.filter { group in  // newest first, as `status()` answers
            (states == nil || states!.contains("\(group.state)"))
                && (name == nil || Self.matches(name: group.name, pattern: name!) || group.id == name)
        }
        let page = matching.dropFirst(offset).prefix(limit)
        var lines: [JSONValue] = []
        for group in page {
            let detail = try? await client.status(group.id)
            lines.append(DashboardJSON.summary(group, detail: detail))
        }
        var counts: [String: JSONValue] = [:]
        for state in GroupState.allCases { counts["\(state)"] = .int(0) }
        for group in all { counts["\(group.state)"] = .int((counts["\(group.state)"]?.int64Value ?? 0) + 1) }
        return [
            "groups": .array(lines), "total": .int(Int64(matching.count)), "offset": .int(Int64(offset)),
            "limit": .int(Int64(limit)), "counts": .object(counts),
        ]
    }

    /// A glob (`*`, `?`) when the pattern has one, else a case-insensitive substring.
    static func matches(name: String, pattern: String) -> Bool {
        guard pattern.contains("*") || pattern.contains("?") else {
            return name.lowercased().contains(pattern.lowercased())
        }
        return fnmatch(pattern, name, 0) == 0
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
        try identify(request)
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
        try await call { try await client.cancel(group, child: child, reason: reason) }
        logger.notice(
            "dashboard cancel",
            metadata: ["group.id": "\(group)", "child.path": "\(child ?? "")", "token.name": "\(token.name)"])
        return ["accepted": true, "group": .string(group), "child": DashboardJSON.optional(child)]
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
            details = await unfinishedGroups(try await call { try await client.status() })
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

    /// The details of the groups of `groups` that have not finished (one request each).
    func unfinishedGroups(_ groups: [GroupSummary]) async -> [GroupDetail] {
        var details: [GroupDetail] = []
        for group in groups where !group.state.isFinished {
            if let detail = try? await client.status(group.id) { details.append(detail) }
        }
        return details
    }

    func locksJSON() async throws(APIError) -> JSONValue {
        let locks = try await call { try await client.locks() }
        return ["locks": .array(locks.map(DashboardJSON.lock))]
    }
}

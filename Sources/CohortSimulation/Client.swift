import CohortClientCore
import CohortCore
import CohortSpec
import CohortWire
import Foundation

/// A simulated client: the real client's state machine (``ClientSession``, the same code
/// `ClientLoop` runs) on simulated time, over its own numbered connections. It submits
/// groups with its own ids (`--id`), resubmits them, cancels groups and children, and watches
/// some of its groups; what the session fails (a timeout, the coordinator away too long) it
/// submits again later under the same id.
struct SimClient {
    typealias Session = ClientSession<Timestamp>

    /// What an open request of the client is for.
    enum Call: CustomStringConvertible {
        case submit(id: String, spec: GroupSpec)
        case cancel(group: String, path: String)
        case watch(group: String)

        var description: String {
            switch self {
            case .submit(let id, _): "submit \(id)"
            case .cancel(let group, let path): "cancel \(group)/\(path)"
            case .watch(let group): "watch \(group)"
            }
        }
    }

    let index: Int
    var submitted = 0
    var session: Session
    /// Sessions begun (a new one after the last ended: the client process starts again).
    var sessions = 1
    /// The connection the client's socket has now (a new number after every reconnection);
    /// nil before its first HELLO.
    var connection: UInt64?
    /// The connection broke; the session hears it at the next tick (the socket monitor).
    var disconnected = false
    var partitioned = false
    /// Request ids never repeat within a client.
    var nextRequest: UInt64 = 1
    /// Open requests, by request id.
    var calls: [UInt64: Call] = [:]
    /// Watches that saw their group's outcome (request id → group).
    var watchesSeen: [UInt64: String] = [:]
    /// Groups it got an id for.
    var accepted: [String] = []
    /// Submissions without an answer (the session failed them, or they waited for a session):
    /// sent again later with the same id.
    var unaccepted: [(id: String, spec: GroupSpec)] = []

    init(index: Int) {
        self.index = index
        session = Self.makeSession()
    }

    static func makeSession() -> Session {
        Session(settings: Session.Settings(endpoint: "sim://coordinator"))
    }

    var isServing: Bool {
        if case .serving = session.phase { return true }
        return false
    }

    /// Submissions open or waiting to be sent again.
    var submissionsInFlight: Int {
        unaccepted.count + calls.values.count { if case .submit = $0 { true } else { false } }
    }
}

extension Simulation {
    /// Starts every client's first session.
    mutating func startClients() {
        for client in clients.indices { clientPerform(client, clients[client].session.connect(now: now)) }
    }

    mutating func submitSomething() {
        let active = checker.known.keys.count { checker.groupOutcomes[$0] == nil }
        guard active < configuration.maxActiveGroups else { return }
        let client = random.int(0...(clients.count - 1))
        guard clients[client].submissionsInFlight < 4 else { return }
        clients[client].submitted += 1
        let id = "c\(client)-\(clients[client].submitted)"
        let spec = randomSpec(name: "g")
        guard (try? spec.validate()) != nil else { return note("invalid spec skipped") }
        let groups = spec.flattened().groups
        if groups.contains(where: { $0.fanOut == .matrix }) { note("submit with a matrix") }
        if groups.contains(where: \.mapPending) { note("submit with a map") }
        submit(spec, id: id, client: client)
    }

    /// Sends a submission through the client's session (held until it serves).
    mutating func submit(_ spec: GroupSpec, id: String, client: Int) {
        // One submission of an id at a time (a resubmission of one still open waits for it).
        guard !clients[client].calls.values.contains(where: { if case .submit(id, _) = $0 { true } else { false } })
        else { return }
        guard clients[client].isServing else {
            guard !clients[client].unaccepted.contains(where: { $0.id == id }) else { return }
            clients[client].unaccepted.append((id, spec))
            return
        }
        note("submit")
        documents[id] = spec
        let submission = Submission(groupID: id, document: id, format: .json, sourceName: "sim")
        clientRequest(client, .submit(submission), call: .submit(id: id, spec: spec), answering: .once)
    }

    /// Sends again what was never answered (the client retries with its id).
    mutating func retryUnaccepted() {
        for client in clients.indices where clients[client].isServing {
            let waiting = clients[client].unaccepted
            clients[client].unaccepted = []
            for (id, spec) in waiting { submit(spec, id: id, client: client) }
        }
    }

    /// A resubmission of an accepted group with the same id and spec: idempotent.
    mutating func resubmitSomething() {
        retryUnaccepted()
        let client = random.int(0...(clients.count - 1))
        guard !clients[client].accepted.isEmpty else { return }
        let id = clients[client].accepted[random.int(0...(clients[client].accepted.count - 1))]
        guard let spec = journal.groups[id]?.spec else {
            return fail(.acceptedIsJournaled, "\(id) was accepted but the journal has no spec for it")
        }
        note("resubmit")
        submit(spec, id: id, client: client)
    }

    mutating func cancelSomething() {
        let client = random.int(0...(clients.count - 1))
        guard !clients[client].accepted.isEmpty, clients[client].isServing else { return }
        let id = clients[client].accepted[random.int(0...(clients[client].accepted.count - 1))]
        guard let flat = checker.accepted[id] else { return }
        let paths = flat.leaves.map(\.path) + flat.groups.map(\.path).filter { !$0.isEmpty }
        let path = random.int(0...2) == 0 ? "" : paths[random.int(0...(paths.count - 1))]
        note(path.isEmpty ? "cancel group" : "cancel child")
        log("client c\(client) cancels \(id)/\(path)")
        clientRequest(
            client, .cancel(group: id, path: path.isEmpty ? nil : path, reason: "sim cancel"),
            call: .cancel(group: id, path: path), answering: .once)
    }

    /// The client watches one of its groups until it ends (`cohort submit --watch`).
    mutating func watch(_ group: String, client: Int) {
        guard clients[client].isServing else { return }
        note("watch")
        clientRequest(client, .watch(group: group), call: .watch(group: group), answering: .stream)
    }

    mutating func clientRequest(
        _ client: Int, _ kind: ClientRequest.Kind, call: SimClient.Call, answering: SimClient.Session.Answering
    ) {
        let id = clients[client].nextRequest
        clients[client].nextRequest += 1
        clients[client].calls[id] = call
        clientPerform(client, clients[client].session.request(id, kind, answering: answering, now: now))
    }

    /// Time passed: the session hears of a broken connection, then its timers run.
    mutating func clientTick(_ client: Int) {
        if clients[client].disconnected {
            clients[client].disconnected = false
            clientPerform(client, clients[client].session.connection(.disconnected, now: now))
        }
        clientPerform(client, clients[client].session.tick(now: now))
    }

    /// A lost message breaks the client's connection: what is on the wire to or from it is
    /// gone, libzmq connects again under a new routing id, and the socket monitor tells the
    /// session (at its next tick).
    mutating func breakClientConnection(of client: Int, dropping message: Message? = nil) {
        count("client connection broken")
        log("drop \(message?.summary ?? "-"): connection of client c\(client) broken")
        network.removeAll { $0.peer == .client(client) }
        guard clients[client].connection != nil else { return }
        nextConnection += 1
        clients[client].connection = nextConnection
        clients[client].disconnected = true
    }

    /// A message to or from a client.
    mutating func deliverClient(_ message: Message, client: Int) {
        if message.toCoordinator, reachesDeposed(message.connection) {
            log("client c\(client) → deposed c \(message.summary)")
            return actAsDeposed { $0.coordinatorReceiveFromClient(message, client: client) }
        }
        if message.toCoordinator, reachesStandby(message.connection) {
            // A standby refuses it NOT_LEADER: the session moves to the leader (a new
            // connection; what it had open is sent again there).
            log("client c\(client) → standby \(message.summary): moves to the leader")
            guard clients[client].connection == message.connection else { return }
            nextConnection += 1
            clients[client].connection = nextConnection
            clients[client].disconnected = true
            return
        }
        if message.toCoordinator {
            guard scheduler != nil else {
                log("lost (coordinator down) \(message.summary)")
                return
            }
            log("client c\(client) → c \(message.summary)")
            coordinatorReceiveFromClient(message, client: client)
            return
        }
        guard message.connection == clients[client].connection else {
            log("client c\(client) drops \(message.summary): not its connection")
            return
        }
        log("c → client c\(client) \(message.summary)")
        switch message {
        case .clientWelcome(_, let welcome):
            clientPerform(client, clients[client].session.received(.success(.handshake(.welcome(welcome))), now: now))
        case .reply(_, let reply):
            clientPerform(client, clients[client].session.received(.success(.coordinatorReply(reply)), now: now))
        default:
            break
        }
    }

    /// Carries out the session's actions, as `ClientLoop` does, and tells the checker what the
    /// client was told.
    mutating func clientPerform(_ client: Int, _ actions: [SimClient.Session.Action]) {
        for action in actions {
            switch action {
            case .sendHello:
                if clients[client].connection == nil {
                    nextConnection += 1
                    clients[client].connection = nextConnection
                }
                send(.clientHello(clients[client].connection!), peer: .client(client))
            case .send(let request):
                guard let connection = clients[client].connection else { continue }
                send(.request(connection, request), peer: .client(client))
            case .welcomed(let welcome):
                log("client c\(client) welcomed (epoch \(welcome.epoch))")
            case .answer(let id, let kind):
                clientAnswered(client, id, kind)
            case .yield(let id, let kind):
                clientWatchEvent(client, id, kind)
            case .finish(let id):
                clients[client].calls[id] = nil
                if clients[client].watchesSeen[id] == nil {
                    fail(.watchSeesOutcome, "client c\(client)'s watch #\(id) ended without the group's outcome")
                }
            case .fail(let id, let error):
                clientCallFailed(client, id, error)
            case .connectionChanged(let change):
                log("client c\(client) connection: \(change)")
            case .log, .moveTo:
                break  // one coordinator in the simulation: nowhere else to go
            case .stop(let error):
                // The client process gives up and is started again: a new session, a new socket.
                log("client c\(client) session ended: \(error.code.rawValue)")
                note("client session ended")
                clients[client].session = SimClient.makeSession()
                clients[client].sessions += 1
                nextConnection += 1
                clients[client].connection = nextConnection
                clients[client].disconnected = false
                clientPerform(client, clients[client].session.connect(now: now))
            }
        }
    }

    /// The one answer of a submit or a cancel.
    mutating func clientAnswered(_ client: Int, _ id: UInt64, _ kind: CoordinatorReply.Kind) {
        guard let call = clients[client].calls.removeValue(forKey: id) else { return }
        switch (call, kind) {
        case (.submit(let group, _), .submitted(let receipt)):
            log("client c\(client) got id \(receipt.id) already=\(receipt.alreadySubmitted)")
            let wasAccepted = checker.accepted[group] != nil
            if !wasAccepted, let flat = checker.known[group] {
                checker.accepted[group] = flat
                clients[client].accepted.append(group)
            }
            checkAccepted(group, wasAccepted: wasAccepted, alreadySubmitted: receipt.alreadySubmitted)
            if !wasAccepted, random.int(0...2) == 0 { watch(group, client: client) }
        case (.cancel(let group, let path), .cancelAccepted):
            log("client c\(client) told cancel accepted \(group)/\(path)")
            checker.acknowledgedCancels[group, default: []].append(path)
        case (_, .error(let error)):
            fail(.schedulerAccepts, "client c\(client)'s request #\(id) refused: \(error.code) \(error.message)")
        default:
            fail(.schedulerAccepts, "client c\(client)'s request #\(id) got an unexpected answer \(describe(kind))")
        }
    }

    /// What a watch yields: the first snapshot, and the group's end.
    mutating func clientWatchEvent(_ client: Int, _ id: UInt64, _ kind: CoordinatorReply.Kind) {
        guard case .watch(let group) = clients[client].calls[id] else { return }
        let seen: GroupState?
        switch kind {
        case .group(let detail): seen = detail.state.isFinished ? detail.state : nil
        case .watchEvents(let events):
            seen =
                events.lazy.compactMap { event -> GroupState? in
                    if case .finished(let state, _) = event.kind { state } else { nil }
                }.first
        default: seen = nil
        }
        guard let seen else { return }
        if clients[client].watchesSeen[id] != nil {
            return fail(.watchSeesOutcome, "client c\(client)'s watch #\(id) of \(group) saw its outcome twice")
        }
        clients[client].watchesSeen[id] = group
        log("client c\(client) watch #\(id) sees \(group) \(seen)")
        guard let journaled = journal.groups[group]?.outcome?.0 else {
            return fail(.watchSeesOutcome, "client c\(client) saw \(group) end \(seen); the journal has no outcome")
        }
        if journaled.wireState != seen {
            fail(.watchSeesOutcome, "client c\(client) saw \(group) end \(seen); the journal says \(journaled)")
        }
    }

    mutating func clientCallFailed(_ client: Int, _ id: UInt64, _ error: ClientError) {
        guard let call = clients[client].calls.removeValue(forKey: id) else { return }
        log("client c\(client) request #\(id) failed: \(error.code.rawValue)")
        switch call {
        case .submit(let group, let spec):
            note("submit unanswered")
            if !clients[client].unaccepted.contains(where: { $0.id == group }) {
                clients[client].unaccepted.append((group, spec))
            }
        case .cancel:
            note("cancel unanswered")
        case .watch:
            note("watch failed")
        }
    }

    /// A random valid spec: nested groups and sequences, `after` and `inject` to earlier
    /// siblings, `exclusive` at group and child level from the shared categories (some of
    /// them counting locks: ``declaredLimits``, ``configuredLimits``), retries, timeouts,
    /// `if:` and `require:` over earlier siblings (often on dependents of children that may
    /// fail), `repeat:`, matrix and map fan-outs (injected from as lists), and a priority (derived
    /// from the spec's size rather than drawn).
    mutating func randomSpec(name: String) -> GroupSpec {
        var counter = 0
        func categories() -> [String] { Self.categories.filter { _ in random.int(0...5) == 0 } }
        func children(depth: Int) -> [ChildSpec] {
            var list: [ChildSpec] = []
            for _ in 0..<random.int(1...4) {
                counter += 1
                let childName = "c\(counter)"
                let after = list.map(\.name).filter { _ in random.int(0...2) == 0 }
                let condition = random.int(0...4) == 0 ? randomCondition(over: list) : nil
                let requirement = random.int(0...9) == 0 ? randomCondition(over: list, requirement: true) : nil
                if depth < 2, random.int(0...4) == 0 {
                    list.append(
                        ChildSpec(
                            childName, mode: random.int(0...1) == 0 ? .parallel : .sequence,
                            onChildFailure: ChildFailurePolicy.allCases[random.int(0...2)], after: after,
                            exclusive: random.int(0...2) == 0 ? categories() : [],
                            condition: condition, requirement: requirement,
                            children: children(depth: depth + 1)))
                } else {
                    let producers = list.filter { !$0.isGroup }.map(\.name)
                        .filter { _ in random.int(0...3) == 0 }
                    // One procedure in six fans out over a small matrix (docs/spec.md, "Fan-out"),
                    // one in six (with an earlier procedure sibling) maps over that sibling's
                    // `items` (0 to 3 of them; now and then over `n`, a number, which fails the
                    // map), some with `maxParallel`.
                    let fanOut = random.int(0...11)
                    let matrix =
                        fanOut < 2
                        ? Matrix(
                            axes: (0..<random.int(1...2)).map { axis in
                                Matrix.Axis(key: "k\(axis)", values: (0..<random.int(1...3)).map { .int(Int64($0)) })
                            }) : nil
                    let source = list.last { !$0.isGroup && $0.matrix == nil && $0.map == nil }
                    let map = source.flatMap { source -> MapSpec? in
                        guard fanOut == 2 || fanOut == 3 else { return nil }
                        return MapSpec(
                            from: source.name, select: random.int(0...9) == 0 ? "n" : "items",
                            maxParallel: random.int(0...1) == 0 ? random.int(1...2) : nil)
                    }
                    list.append(
                        ChildSpec(
                            childName, run: Self.kind, after: after, exclusive: categories(),
                            timeout: random.int(0...5) == 0 ? .seconds(Int64(random.int(1...5))) : nil,
                            retry: random.int(0...3) == 0
                                ? RetryPolicy(attempts: random.int(2...3), backoff: .milliseconds(200)) : nil,
                            onWorkerLoss: random.int(0...9) == 0 ? .fail : .retry,
                            inject: producers.map {
                                Injection(from: $0, select: "n", into: JSONPath([.key("from_\($0)")]))
                            },
                            condition: condition, requirement: requirement,
                            repeating: random.int(0...7) == 0
                                ? RepeatPolicy(
                                    until: SpecExpression("output.n > \(random.int(0...999))"), max: random.int(1...4),
                                    every: .milliseconds(Int64(random.int(0...3) * 100))) : nil,
                            matrix: matrix, map: map))
                }
            }
            return list
        }
        var spec = GroupSpec(
            name, mode: random.int(0...2) == 0 ? .sequence : .parallel,
            timeout: random.int(0...7) == 0 ? .seconds(Int64(random.int(5...60))) : nil,
            onChildFailure: ChildFailurePolicy.allCases[random.int(0...2)],
            exclusive: random.int(0...5) == 0 ? [Self.categories[random.int(0...2)]] : [],
            children: children(depth: 0))
        spec.limits = Self.declaredLimits
        spec.priority = [0, 0, 3, -2, 0, 1][counter % 6]
        return spec
    }
}

extension Simulation {
    /// An `if:` (or, with `requirement`, a `require:`) over earlier siblings `list`: their
    /// outcomes and procedures' outputs (`{"n": 0…999}`); nil if there is none.
    mutating func randomCondition(over list: [ChildSpec], requirement: Bool = false) -> SpecExpression? {
        guard !list.isEmpty else { return random.int(0...1) == 0 ? "always()" : nil }
        let sibling = list[random.int(0...(list.count - 1))]
        let name = sibling.name
        let procedures = list.filter { !$0.isGroup }.map(\.name)
        var choices = [
            "failed(\(name))", "succeeded(\(name))", "!cancelled(\(name))", "skipped(\(name)) || failed(\(name))",
            "always()", "succeeded(\(name)) && !skipped(\(name))",
        ]
        if let producer = procedures.last {
            choices.append("succeeded(\(producer)) && outputs.\(producer).n >= \(random.int(0...999))")
            // A missing path: evaluating it fails the child.
            if random.int(0...3) == 0 { choices.append("outputs.\(producer).missing == 1") }
        }
        if requirement { choices = choices.filter { !$0.hasPrefix("skipped") && $0 != "always()" } }
        return SpecExpression(choices[random.int(0...(choices.count - 1))])
    }
}

extension GroupPhase {
    /// The coordinator's wire state for a phase (as `WireMapping` maps it).
    var wireState: GroupState {
        switch self {
        case .pending: .pending
        case .running: .running
        case .succeeded: .succeeded
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }
}

func describe(_ kind: ClientRequest.Kind) -> String {
    switch kind {
    case .submit(let submission): "submit \(submission.groupID ?? "-")"
    case .cancel(let group, let path, _): "cancel \(group)/\(path ?? "")"
    case .watch(let group): "watch \(group)"
    case .unwatch(let group): "unwatch \(group)"
    case .workers: "workers"
    case .disconnect: "disconnect"
    case .status, .result, .locks, .drain, .undrain, .rerun, .addChildren, .logs: "other"
    }
}

func describe(_ kind: CoordinatorReply.Kind) -> String {
    switch kind {
    case .submitted(let receipt): "submitted \(receipt.id) already=\(receipt.alreadySubmitted)"
    case .cancelAccepted(let group, let path, _): "cancel accepted \(group)/\(path ?? "")"
    case .group(let detail): "group \(detail.id) \(detail.state)"
    case .watchEvents(let events): "events \(events.map { "\($0.group) \($0.kind)" })"
    case .error(let error): "error \(error.code) \(error.message)"
    case .workers: "workers"
    case .acknowledged: "acknowledged"
    case .groups, .result, .locks, .childrenAdded, .logs: "other"
    }
}

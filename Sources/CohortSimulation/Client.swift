import CohortCore
import CohortSpec
import Foundation

/// A simulated client: it submits groups with its own ids (`--id`), resubmits them, and
/// cancels groups and children.
struct SimClient {
    let index: Int
    var submitted = 0
    /// Groups it got an id for.
    var accepted: [String] = []
    /// Submissions the coordinator did not answer (it was down): sent again later.
    var unaccepted: [(id: String, spec: GroupSpec)] = []

    init(index: Int) { self.index = index }
}

extension Simulation {
    mutating func submitSomething() {
        guard scheduler != nil else { return }
        let active = checker.accepted.keys.count { checker.groupOutcomes[$0] == nil }
        guard active < configuration.maxActiveGroups else { return }
        let client = random.int(0...(clients.count - 1))
        clients[client].submitted += 1
        let id = "c\(client)-\(clients[client].submitted)"
        let spec = randomSpec(name: "g")
        guard (try? spec.validate()) != nil else { return note("invalid spec skipped") }
        submit(spec, id: id, client: client)
    }

    mutating func submit(_ spec: GroupSpec, id: String, client: Int) {
        guard var scheduler else {
            clients[client].unaccepted.append((id, spec))
            return
        }
        note("submit")
        let wasAccepted = checker.accepted[id] != nil
        let flat = spec.flattened()
        do {
            let acceptance = try scheduler.submit(spec, id: id, flat: flat, now: now)
            self.scheduler = scheduler
            log("submit \(id) leaves=\(flat.leaves.count) already=\(acceptance.alreadySubmitted)")
            if !wasAccepted {
                checker.accepted[id] = flat
                clients[client].accepted.append(id)
            }
            apply(acceptance.actions)
            checkAccepted(id, wasAccepted: wasAccepted, acceptance: acceptance)
        } catch {
            fail(.schedulerAccepts, "submit \(id) refused: \(error.message)")
        }
        answerSettledCancels()
    }

    /// Sends again what a down coordinator never answered (the client retries with its id).
    mutating func retryUnaccepted() {
        guard scheduler != nil else { return }
        for client in clients.indices {
            let waiting = clients[client].unaccepted
            clients[client].unaccepted = []
            for (id, spec) in waiting { submit(spec, id: id, client: client) }
        }
    }

    /// A resubmission of an accepted group with the same id and spec: idempotent.
    mutating func resubmitSomething() {
        retryUnaccepted()
        let client = random.int(0...(clients.count - 1))
        guard !clients[client].accepted.isEmpty, scheduler != nil else { return }
        let id = clients[client].accepted[random.int(0...(clients[client].accepted.count - 1))]
        guard let spec = journal.groups[id]?.spec else {
            return fail(.acceptedIsJournaled, "\(id) was accepted but the journal has no spec for it")
        }
        note("resubmit")
        submit(spec, id: id, client: client)
    }

    mutating func cancelSomething() {
        let client = random.int(0...(clients.count - 1))
        guard !clients[client].accepted.isEmpty, scheduler != nil else { return }
        let id = clients[client].accepted[random.int(0...(clients[client].accepted.count - 1))]
        guard let flat = checker.accepted[id] else { return }
        let paths = flat.leaves.map(\.path) + flat.groups.map(\.path).filter { !$0.isEmpty }
        let path = random.int(0...2) == 0 ? "" : paths[random.int(0...(paths.count - 1))]
        note(path.isEmpty ? "cancel group" : "cancel child")
        log("client c\(client) cancels \(id)/\(path)")
        withScheduler("cancel \(id)/\(path)") { scheduler, now throws(SchedulerError) in
            if path.isEmpty { return try scheduler.cancelGroup(id, reason: "sim cancel", now: now) }
            return try scheduler.cancelChild(id, path: path, reason: "sim cancel", now: now)
        }
        pendingCancels.append((id, path))
        answerSettledCancels()
    }

    /// A random valid spec: nested groups and sequences, `after` and `inject` to earlier
    /// siblings, `exclusive` at group and child level from the shared categories, retries and
    /// timeouts.
    mutating func randomSpec(name: String) -> GroupSpec {
        var counter = 0
        func categories() -> [String] { Self.categories.filter { _ in random.int(0...5) == 0 } }
        func children(depth: Int) -> [ChildSpec] {
            var list: [ChildSpec] = []
            for _ in 0..<random.int(1...4) {
                counter += 1
                let childName = "c\(counter)"
                let after = list.map(\.name).filter { _ in random.int(0...2) == 0 }
                if depth < 2, random.int(0...4) == 0 {
                    list.append(
                        ChildSpec(
                            childName, mode: random.int(0...1) == 0 ? .parallel : .sequence,
                            onChildFailure: ChildFailurePolicy.allCases[random.int(0...2)], after: after,
                            exclusive: random.int(0...2) == 0 ? categories() : [],
                            children: children(depth: depth + 1)))
                } else {
                    let producers = list.filter { !$0.isGroup }.map(\.name).filter { _ in random.int(0...3) == 0 }
                    list.append(
                        ChildSpec(
                            childName, run: Self.kind, after: after, exclusive: categories(),
                            timeout: random.int(0...5) == 0 ? .seconds(Int64(random.int(1...5))) : nil,
                            retry: random.int(0...3) == 0
                                ? RetryPolicy(attempts: random.int(2...3), backoff: .milliseconds(200)) : nil,
                            onWorkerLoss: random.int(0...9) == 0 ? .fail : .retry,
                            inject: producers.map {
                                Injection(from: $0, select: "n", into: JSONPath([.key("from_\($0)")]))
                            }))
                }
            }
            return list
        }
        return GroupSpec(
            name, mode: random.int(0...2) == 0 ? .sequence : .parallel,
            timeout: random.int(0...7) == 0 ? .seconds(Int64(random.int(5...60))) : nil,
            onChildFailure: ChildFailurePolicy.allCases[random.int(0...2)],
            exclusive: random.int(0...5) == 0 ? [Self.categories[random.int(0...2)]] : [],
            children: children(depth: 0))
    }
}

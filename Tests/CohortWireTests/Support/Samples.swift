import CohortWire
import Foundation

/// One message of every kind, each with non-default values in every field.
enum Samples {
    static let task = WireAttemptRef(id: 0xDEAD_BEEF_0042, group: "g-7f3a", path: "tests/unit", attempt: 3)
    static let otherAttempt = WireAttemptRef(id: 77, group: "release-2", path: "build", attempt: 1)
    static let t1 = WireTimestamp(nanosecondsSinceEpoch: 1_767_225_600_123_456_789)
    static let t2 = WireTimestamp(nanosecondsSinceEpoch: 1_767_225_601_987_654_321)
    static let json = Data(#"{"value":"1.2.3","n":[1,2,3]}"#.utf8)

    static let child = ChildStatus(
        name: "unit", path: "tests/unit", state: .waiting, worker: "w-2", attempt: 2,
        error: "exit 1", startedAt: t1, finishedAt: t2, waitingReason: "lock repo held by release/checkout")

    /// A child on its third attempt, after a failure and a lost worker (one that never started).
    static let retriedChild = ChildStatus(
        name: "deploy", path: "deploy", state: .running, worker: "builder-3", attempt: 3, startedAt: t2,
        dependsOn: ["tests/unit"], kind: "shell",
        earlierAttempts: [
            AttemptSummary(
                attempt: 1, worker: "builder-1", startedAt: t1, finishedAt: t2, outcome: "failed",
                error: "exit code 2"),
            AttemptSummary(
                attempt: 2, worker: "w-9", finishedAt: t2, outcome: "lost",
                error: "worker builder-2 (w-9) was lost: connection closed"),
        ])

    static let dispatchAttempt = AttemptDispatch(
        ref: task, kind: "shell", input: json, fencingTokens: ["repo": 41, "db": 7],
        timeout: .milliseconds(300_000), env: ["VERSION": "1.2.3"], holds: ["repo"],
        attemptToken: "0123456789abcdef0123456789abcdef")

    static let result = AttemptResult(ref: task, outcome: .succeeded(output: json), startedAt: t1, finishedAt: t2)

    /// Every message kind, labelled.
    static let all: [(String, WireMessage)] = [
        ("hello", .handshake(.hello(Hello(role: .worker, softwareVersion: "0.3.1", peerName: "builder-1")))),
        ("hello client", .handshake(.hello(Hello(role: .client, softwareVersion: "0.3.1", peerName: "cli@host")))),
        (
            "welcome",
            .handshake(
                .welcome(
                    Welcome(
                        coordinatorID: "coord-a", epoch: 12, peerID: "w-3", heartbeatInterval: .milliseconds(1500),
                        heartbeatLiveness: 4, softwareVersion: "0.3.2", acknowledgesHeartbeats: true)))
        ),
        ("handshake error", .handshake(.error(HandshakeError.unsupportedVersion(9)))),

        (
            "submit",
            .clientRequest(
                ClientRequest(
                    requestID: 1,
                    .submit(
                        Submission(
                            groupID: "nightly-42", document: "name: release\nchildren: []\n", format: .yaml,
                            sourceName: "release.yaml", strict: true))))
        ),
        (
            "submit json",
            .clientRequest(
                ClientRequest(
                    requestID: 2,
                    .submit(
                        Submission(
                            groupID: nil, document: #"{"children":[]}"#, format: .json, sourceName: nil))))
        ),
        ("status all", .clientRequest(ClientRequest(requestID: 3, .status(group: nil)))),
        ("status one", .clientRequest(ClientRequest(requestID: 4, .status(group: "g-7f3a")))),
        ("status empty id", .clientRequest(ClientRequest(requestID: 4, .status(group: "")))),
        ("result", .clientRequest(ClientRequest(requestID: 5, .result(group: "g-7f3a", path: "tests/unit")))),
        ("result group", .clientRequest(ClientRequest(requestID: 5, .result(group: "g-7f3a", path: nil)))),
        (
            "cancel",
            .clientRequest(ClientRequest(requestID: 6, .cancel(group: "g-7f3a", path: "build", reason: "user asked")))
        ),
        ("cancel group", .clientRequest(ClientRequest(requestID: 6, .cancel(group: "g-7f3a", path: nil, reason: "")))),
        ("watch", .clientRequest(ClientRequest(requestID: 7, .watch(group: "g-7f3a")))),
        ("unwatch", .clientRequest(ClientRequest(requestID: 8, .unwatch(group: "g-7f3a")))),
        ("workers", .clientRequest(ClientRequest(requestID: 9, .workers))),
        ("locks", .clientRequest(ClientRequest(requestID: 10, .locks))),
        ("disconnect", .clientRequest(ClientRequest(requestID: 11, .disconnect(reason: "bye")))),
        ("drain", .clientRequest(ClientRequest(requestID: 12, .drain(worker: "build-1")))),
        ("undrain", .clientRequest(ClientRequest(requestID: 13, .undrain(worker: "build-1")))),
        ("rerun", .clientRequest(ClientRequest(requestID: 15, .rerun(group: "release-7", id: "release-7-again")))),
        ("rerun bare", .clientRequest(ClientRequest(requestID: 16, .rerun(group: "release-7", id: nil)))),
        (
            "logs",
            .clientRequest(
                ClientRequest(
                    requestID: 17,
                    .logs(
                        LogsQuery(
                            group: "g-7f3a", path: "tests/unit", attempt: 2, after: 41, before: 90, tail: 20, since: t1,
                            limit: 500)
                    ),
                    attemptToken: "00112233445566778899aabbccddeeff"))
        ),
        ("logs bare", .clientRequest(ClientRequest(requestID: 18, .logs(LogsQuery(group: "g-7f3a", path: "build"))))),
        (
            "add children",
            .clientRequest(
                ClientRequest(
                    requestID: 15,
                    .addChildren(
                        group: "g-7f3a",
                        ChildrenAddition(document: "- name: more\n  run: echo\n", format: .yaml, into: "deploy")),
                    attemptToken: "00112233445566778899aabbccddeeff"))
        ),
        (
            "cancel with attempt token",
            .clientRequest(
                ClientRequest(
                    requestID: 16, .cancel(group: "g-7f3a", path: nil, reason: "rollback"),
                    attemptToken: "00112233445566778899aabbccddeeff"))
        ),
        (
            "status filtered",
            .clientRequest(
                ClientRequest(
                    requestID: 14,
                    .status(
                        group: nil,
                        filter: GroupFilter(
                            states: [.failed, .cancelled], nameGlob: "release-[!0-9]*",
                            submittedSince: WireTimestamp(nanosecondsSinceEpoch: 1_700_000_000_000_000_000), limit: 7)))
            )
        ),

        (
            "submitted",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 1,
                    .submitted(
                        SubmitReceipt(
                            id: "g-7f3a", name: "release", warnings: [#"no connected worker offers kind "resize""#],
                            alreadySubmitted: true))))
        ),
        (
            "submitted rerun",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 15,
                    .submitted(SubmitReceipt(id: "release-8", name: "release", reused: 12, rerunOf: "release-7"))))
        ),
        (
            "groups",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 3,
                    .groups([
                        GroupSummary(id: "g-1", name: "a", state: .running, submittedAt: t1),
                        GroupSummary(id: "g-2", name: "b", state: .cancelled, submittedAt: t2, finishedAt: t2),
                    ])))
        ),
        (
            "group",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 4,
                    .group(
                        GroupDetail(
                            id: "g-7f3a", name: "release", state: .failed, submittedAt: t1, finishedAt: t2,
                            reason: "build failed",
                            children: [
                                child, retriedChild, ChildStatus(name: "lint", path: "lint", state: .ready),
                                ChildStatus(name: "tests", path: "tests", state: .running, isGroup: true),
                            ]))))
        ),
        (
            "result reply",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 5,
                    .result(
                        ResultReply(
                            group: "g-7f3a", path: "version", outcome: .succeeded(output: json)))))
        ),
        (
            "result failed",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 5,
                    .result(
                        ResultReply(
                            group: "g-7f3a", path: nil, outcome: .failed(error: "exit status 2")))))
        ),
        (
            "result cancelled",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 5,
                    .result(
                        ResultReply(
                            group: "g-7f3a", path: "x", outcome: .cancelled(reason: "timed out")))))
        ),
        (
            "cancel accepted",
            .coordinatorReply(CoordinatorReply(requestID: 6, .cancelAccepted(group: "g-7f3a", path: "build")))
        ),
        (
            "cancel of a finished child",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 6, .cancelAccepted(group: "g-7f3a", path: "build", alreadyFinished: .skipped)))
        ),
        (
            "watch events",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 7,
                    .watchEvents([
                        WatchEvent(group: "g-7f3a", at: t1, .child(child)),
                        WatchEvent(group: "g-7f3a", at: t2, .finished(state: .succeeded, reason: "all done")),
                        WatchEvent(group: "g-7f3a", at: t2, .finished(state: .cancelled, reason: nil)),
                    ])))
        ),
        (
            "workers reply",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 9,
                    .workers([
                        WorkerInfo(
                            id: "w-1", name: "builder-1", host: "10.0.0.5", labels: ["linux", "gpu"], slots: 4,
                            running: 3, state: .ready, kinds: ["echo", "shell"], drained: true,
                            lastHeardAgo: .milliseconds(400)),
                        WorkerInfo(id: "w-2", name: "b2", host: "h", labels: [], slots: 1, running: 0, state: .lost),
                    ])))
        ),
        (
            "locks reply",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 10,
                    .locks([
                        LockInfo(
                            category: "repo", token: 41,
                            holder: LockHolderStatus(
                                group: "g-7f3a", child: "checkout", attempt: 2, worker: "w-1",
                                heldFor: .milliseconds(3200)),
                            waiters: [
                                LockWaiter(group: "g-8", child: "a/b", waitingFor: .milliseconds(1100)),
                                LockWaiter(group: "g-9", child: "c"),
                            ]),
                        LockInfo(category: "db", token: 3, holder: nil, waiters: []),
                    ])))
        ),
        (
            "error",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 1,
                    .error(
                        ProtocolError(
                            code: .invalidSpec, message: "2 errors",
                            specErrors: [
                                SpecError(path: "children[2].inject[0].from", message: #"no child named "buld""#),
                                SpecError(path: "name", message: "must not contain /", line: 3, column: 7),
                            ]))))
        ),
        (
            "unsolicited error",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 0,
                    .error(
                        ProtocolError(
                            code: .shuttingDown, message: "coordinator stopping"))))
        ),
        (
            "restarting notice",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 0,
                    .error(
                        ProtocolError(
                            code: .shuttingDown, message: "coordinator stopping (SIGTERM)", restarting: true))))
        ),
        (
            "strict refusal",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 3,
                    .error(
                        ProtocolError(
                            code: .noCapableWorker,
                            message: "refused (strict): no connected worker offers kind \"wordcont\""))))
        ),
        ("acknowledged", .coordinatorReply(CoordinatorReply(requestID: 8, .acknowledged))),
        (
            "children added",
            .coordinatorReply(
                CoordinatorReply(requestID: 15, .childrenAdded(group: "g-7f3a", paths: ["deploy/more", "deploy/x/y"])))
        ),
        (
            "logs reply",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 17,
                    .logs(
                        LogsPage(
                            group: "g-7f3a", path: "tests/unit", attempt: 2, latestAttempt: 3, state: .failed,
                            attemptFinished: true, lines: logLines, lastSequence: 44, cutBytes: 1_000_000,
                            worker: "build-1", more: true, error: "exited with code 2"))))
        ),
        (
            "logs reply not started",
            .coordinatorReply(
                CoordinatorReply(
                    requestID: 18,
                    .logs(
                        LogsPage(
                            group: "g-7f3a", path: "build", attempt: 0, latestAttempt: 0, state: .waiting,
                            attemptFinished: false, lines: [], lastSequence: 0))))
        ),

        (
            "ready",
            .worker(
                .ready(
                    WorkerReady(
                        name: "builder-1", host: "build-01.example", sessionID: "s-5b9c", labels: ["linux", "gpu"],
                        slots: 4,
                        kinds: ["shell", "sleep", "echo", "fail", "resize"],
                        running: [
                            RunningAttempt(ref: task, startedAt: t1),
                            RunningAttempt(ref: otherAttempt, startedAt: nil),
                        ])))
        ),
        (
            "ready while draining",
            .worker(
                .ready(
                    WorkerReady(
                        name: "builder-2", host: "build-02.example", sessionID: "s-77", labels: [], slots: 1,
                        kinds: ["shell"],
                        running: [RunningAttempt(ref: task, startedAt: t1)], draining: true)))
        ),
        ("worker heartbeat", .worker(.heartbeat(sequence: 0))),
        ("worker numbered heartbeat", .worker(.heartbeat(sequence: 42))),
        (
            "started",
            .worker(.started([AttemptStart(ref: task, startedAt: t1), AttemptStart(ref: otherAttempt, startedAt: t2)]))
        ),
        (
            "results",
            .worker(
                .results([
                    result,
                    AttemptResult(ref: otherAttempt, outcome: .failed(error: "boom"), startedAt: t1, finishedAt: t2),
                    AttemptResult(
                        ref: task, outcome: .cancelled(reason: "timed out", code: .timedOut), startedAt: t1,
                        finishedAt: t2),
                ]))
        ),
        ("lock request", .worker(.lockRequest(LockRequest(requestID: 99, ref: task, categories: ["repo", "db"])))),
        ("lock release", .worker(.lockRelease(requestID: 99))),
        ("lock withdraw", .worker(.lockWithdraw(requestID: 100))),
        ("draining", .worker(.draining(reason: "SIGTERM"))),
        ("worker disconnect", .worker(.disconnect(reason: "shutting down"))),
        ("group cancel by attempt", .worker(.cancelGroup(task, reason: "rollback"))),
        (
            "children added by attempt",
            .worker(.addChildren(task, ChildrenAddition(document: #"[{"name":"x","run":"echo"}]"#, format: .json)))
        ),

        (
            "log lines",
            .worker(
                .logLines([
                    AttemptLogLines(ref: task, lines: logLines),
                    AttemptLogLines(
                        ref: otherAttempt, lines: [LogLine(sequence: 1, at: t2, stream: .stdout, text: [])]),
                ]))
        ),

        ("coordinator heartbeat", .toWorker(.heartbeat(acknowledged: 0))),
        ("coordinator acknowledging heartbeat", .toWorker(.heartbeat(acknowledged: 42))),
        (
            "dispatch",
            .toWorker(
                .dispatch([
                    dispatchAttempt,
                    AttemptDispatch(ref: otherAttempt, kind: "echo", input: Data("{}".utf8)),
                ]))
        ),
        (
            "cancel attempts",
            .toWorker(
                .cancel([
                    AttemptCancellation(ref: task, reason: "group cancelled"),
                    AttemptCancellation(ref: otherAttempt, reason: "timed out", code: .timedOut),
                ]))
        ),
        ("lock grant", .toWorker(.lockGrant(LockGrant(requestID: 99, tokens: ["repo": 42, "db": 8])))),
        (
            "lock denied",
            .toWorker(.lockDenied(LockDenial(requestID: 99, kind: .denied, reason: "category repo held by the group")))
        ),
        (
            "lock cancelled",
            .toWorker(.lockDenied(LockDenial(requestID: 98, kind: .cancelled, reason: "attempt cancelled")))
        ),
        ("lock revoked", .toWorker(.lockDenied(LockDenial(requestID: 97, kind: .revoked, reason: "lease expired")))),
        ("shutdown", .toWorker(.shutdown(ShutdownNotice(reason: "SIGTERM", restarting: true)))),
        (
            "worker error",
            .toWorker(
                .error(
                    WorkerError(
                        code: .superseded, message: "attempt 3 superseded by attempt 4", ref: task, requestID: 5)))
        ),
        ("worker error bare", .toWorker(.error(WorkerError(code: .badFrame, message: "bad frame")))),
        (
            "log stored",
            .toWorker(
                .logStored([LogStored(attemptID: task.id, sequence: 44), LogStored(attemptID: 77, sequence: 1)]))
        ),
    ]

    /// Lines of every stream, one of bytes that are not UTF-8, one partial.
    static let logLines = [
        LogLine(sequence: 41, at: t1, stream: .stdout, text: Array("compiling".utf8)),
        LogLine(sequence: 42, at: t1, stream: .stderr, text: [0xFF, 0x00, 0x1B, 0x5B], partial: true),
        LogLine(sequence: 43, at: t2, stream: .kind, text: Array("retrying the upload".utf8), level: "warning"),
        LogLine(sequence: 44, at: t2, stream: .marker, text: Array("[cohort: 12 bytes cut]".utf8)),
    ]

    /// A name for the kind of `message`; exhaustive, so a new case fails to compile here
    /// until the samples cover it.
    static func kind(of message: WireMessage) -> String {
        switch message {
        case .handshake(let handshake):
            switch handshake {
            case .hello: "hello"
            case .welcome: "welcome"
            case .error: "handshake error"
            }
        case .clientRequest(let request):
            switch request.kind {
            case .submit: "submit"
            case .status: "status"
            case .result: "result"
            case .cancel: "cancel"
            case .watch: "watch"
            case .unwatch: "unwatch"
            case .workers: "workers"
            case .locks: "locks"
            case .disconnect: "disconnect"
            case .drain: "drain"
            case .undrain: "undrain"
            case .rerun: "rerun"
            case .addChildren: "add children"
            case .logs: "logs"
            }
        case .coordinatorReply(let reply):
            switch reply.kind {
            case .submitted: "submitted"
            case .groups: "groups"
            case .group: "group"
            case .result: "result reply"
            case .cancelAccepted: "cancel accepted"
            case .watchEvents: "watch events"
            case .workers: "workers reply"
            case .locks: "locks reply"
            case .error: "error"
            case .acknowledged: "acknowledged"
            case .childrenAdded: "children added"
            case .logs: "logs reply"
            }
        case .worker(let message):
            switch message {
            case .ready: "ready"
            case .heartbeat: "worker heartbeat"
            case .started: "started"
            case .results: "results"
            case .lockRequest: "lock request"
            case .lockRelease: "lock release"
            case .lockWithdraw: "lock withdraw"
            case .draining: "draining"
            case .disconnect: "worker disconnect"
            case .cancelGroup: "group cancel by attempt"
            case .addChildren: "children added by attempt"
            case .logLines: "log lines"
            }
        case .toWorker(let message):
            switch message {
            case .heartbeat: "coordinator heartbeat"
            case .dispatch: "dispatch"
            case .cancel: "cancel attempts"
            case .lockGrant: "lock grant"
            case .lockDenied: "lock denied"
            case .shutdown: "shutdown"
            case .error: "worker error"
            case .logStored: "log stored"
            }
        }
    }

    /// The number of message kinds `kind(of:)` distinguishes.
    static let kindCount = 3 + 14 + 12 + 12 + 8
}

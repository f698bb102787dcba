import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A procedure's events run one at a time, in the order they were posted (ProcedureKit's
/// per-procedure event queue): attaching an observer, did-cancel, will-execute + execute +
/// did-execute, will-finish + did-finish, will-add/did-add, and, for a group, each child's
/// will-finish and did-finish.
///
/// The serialiser is a trampoline, not a dispatch queue: an event posted while no other
/// event of the procedure runs is run at once on the posting thread; one posted while
/// another runs is queued, and the thread running events runs it next. So a procedure
/// nobody else touches pays no thread hop, only a flag in the lock it takes anyway, and
/// nothing ever blocks on the serialiser except a group's child waiting for the group to
/// hear its will-finish (`runEventAndWait`), which only ever waits upwards, child on parent.
///
/// A `finish()` made while an event runs (typically from inside `execute()`) is not a
/// closure but a mark in the queue (`Core.finishAfter`), so the hot path allocates nothing.
extension Procedure {
    struct EventQueue {
        /// Whether a thread is running this procedure's events now.
        var running = false
        /// The thread running them, to tell a nested post from one by another thread.
        var owner: UInt = 0
        var pending: [@Sendable () -> Void] = []
        /// The finish event's place in `pending`: it runs once that many events before it ran.
        var finishAfter: Int?

        /// Takes the serialiser if it is free; returns false if another event runs.
        mutating func enter() -> Bool {
            if running { return false }
            running = true
            owner = currentThreadID()
            return true
        }
    }

    enum NextEvent {
        case idle
        case finish(ProcedureOutcome, [any ProcedureObserver], ProcedureQueue?)
        case run(@Sendable () -> Void)
    }

    /// Runs `event` now if no other event of this procedure runs, else after those queued
    /// before it, on the thread running them. Returns at once in that case.
    final func runEvent(_ event: @escaping @Sendable () -> Void) {
        let now = core.withLock { core -> Bool in
            if core.events.enter() { return true }
            core.events.pending.append(event)
            return false
        }
        guard now else { return }
        event()
        drainEvents()
    }

    /// Runs `event` as the procedure's next event and returns once it has run: now, if no
    /// other event runs; otherwise after the queued events, waiting for the thread running
    /// them. If the calling thread is the one running them (a group's event finishing a
    /// child), it cannot wait for itself: the event is queued and this returns at once.
    /// Only a child waits on its group this way, never the other way round, so waits form
    /// chains up the tree and never a cycle.
    final func runEventAndWait(_ event: @escaping @Sendable () -> Void) {
        let me = currentThreadID()
        enum Plan {
            case now, queued
            case wait(DispatchSemaphore)
        }
        let plan = core.withLock { core -> Plan in
            if core.events.enter() { return .now }
            if core.events.owner == me {
                core.events.pending.append(event)
                return .queued
            }
            let done = DispatchSemaphore(value: 0)
            core.events.pending.append {
                event()
                done.signal()
            }
            return .wait(done)
        }
        switch plan {
        case .now:
            event()
            drainEvents()
        case .queued:
            break
        case .wait(let done):
            done.wait()
        }
    }

    /// Takes the serialiser if no event runs, yielding the processor a few times while one
    /// does (events are short); the caller then runs its event and `drainEvents()`. Lets a
    /// caller that would otherwise wait (`runEventAndWait`) skip the closure and the wait.
    final func tryEnterEvents(yields: Int) -> Bool {
        for attempt in 0...yields {
            if core.withLock({ $0.events.enter() }) { return true }
            if attempt < yields { sched_yield() }
        }
        return false
    }

    /// Runs the events queued while one ran, then gives the serialiser up.
    final func drainEvents() {
        while true {
            let next = core.withLock { core -> NextEvent in
                if core.events.finishAfter == 0 {
                    core.events.finishAfter = nil
                    return .finish(core.outcome!, core.observers, core.queue)
                }
                if !core.events.pending.isEmpty {
                    if let after = core.events.finishAfter { core.events.finishAfter = after - 1 }
                    return .run(core.events.pending.removeFirst())
                }
                core.events.running = false
                core.events.owner = 0
                return .idle
            }
            switch next {
            case .idle: return
            case .finish(let outcome, let observers, let queue): finishEvent(outcome, observers, queue)
            case .run(let event): event()
            }
        }
    }
}

/// An identifier of the calling thread, distinct among live threads.
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
    #else
        UInt(pthread_self())
    #endif
}

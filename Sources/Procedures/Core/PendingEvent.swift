import Synchronization

/// One of a procedure's coming events, held back until whoever holds it lets it go
/// (ProcedureKit's `PendingEvent`): `produce(_:before:)` and a group's
/// `add(child:before:)` take one and let it go once the procedure is added, so the event
/// comes after the will-add and did-add of the procedure produced.
///
/// Take one with `Procedure.postpone(_:)` before the event happens: `.execute` from a
/// will-execute observer (or any time before the procedure starts), `.finish` from a
/// will-finish observer. The event waits until every `PendingEvent` taken for it is
/// released: by `release()`, by the `before:` call it is passed to, or when the last
/// reference to it goes away (so a hold that is dropped never hangs the procedure). While
/// it waits, nothing blocks: the procedure's other events (a produce, a cancel) still run.
public final class PendingEvent: Sendable, CustomStringConvertible {
    /// The events that can be held back.
    public enum Kind: Sendable, CustomStringConvertible {
        /// `execute()`, after the will-execute observers.
        case execute
        /// Becoming finished, after the will-finish observers.
        case finish

        public var description: String {
            switch self {
            case .execute: "execute"
            case .finish: "finish"
            }
        }
    }

    public let kind: Kind
    /// The procedure whose event this holds; nil once released.
    private let procedure: Mutex<Procedure?>

    init(_ kind: Kind, of procedure: Procedure) {
        self.kind = kind
        self.procedure = Mutex(procedure)
    }

    /// Lets the event happen (once every other hold on it is released too). Idempotent.
    public func release() {
        let held = procedure.withLock { slot in
            defer { slot = nil }
            return slot
        }
        held?.releaseHold(on: kind)
    }

    /// Whether the hold was released.
    public var isReleased: Bool { procedure.withLock { $0 == nil } }

    public var description: String {
        "pending \(kind) of \(procedure.withLock { $0?.name } ?? "a procedure (released)")"
    }

    deinit { release() }
}

extension Procedure {
    /// The holds on the execute and finish events, and the event each one holds back.
    struct EventHolds {
        var execute = 0
        var finish = 0
        /// The rest of the execute event, parked while `execute` > 0.
        var parkedExecute: [any ProcedureObserver]?
        /// The rest of the finish event, parked while `finish` > 0.
        var parkedFinish: (ProcedureOutcome, [any ProcedureObserver], ProcedureQueue?)?
    }

    /// Holds back this procedure's coming `kind` event until the returned `PendingEvent` is
    /// released (see `PendingEvent`). Taken once the event has happened, the hold has no effect.
    public final func postpone(_ kind: PendingEvent.Kind) -> PendingEvent {
        core.withLock { core in
            switch kind {
            case .execute: core.holds.execute += 1
            case .finish: core.holds.finish += 1
            }
        }
        return PendingEvent(kind, of: self)
    }

    /// A `PendingEvent` was released: the last hold on a parked event moves it on, as the
    /// procedure's next event.
    fileprivate func releaseHold(on kind: PendingEvent.Kind) {
        enum Resume {
            case none
            case execute([any ProcedureObserver])
            case finish(ProcedureOutcome, [any ProcedureObserver], ProcedureQueue?)
        }
        let resume = core.withLock { core -> Resume in
            switch kind {
            case .execute:
                core.holds.execute -= 1
                guard core.holds.execute == 0, let observers = core.holds.parkedExecute else { return .none }
                core.holds.parkedExecute = nil
                return .execute(observers)
            case .finish:
                core.holds.finish -= 1
                guard core.holds.finish == 0, let parked = core.holds.parkedFinish else { return .none }
                core.holds.parkedFinish = nil
                return .finish(parked.0, parked.1, parked.2)
            }
        }
        switch resume {
        case .none: break
        case .execute(let observers): runEvent { self.executeBody(observers) }
        case .finish(let outcome, let observers, let queue): runEvent { self.completeFinish(outcome, observers, queue) }
        }
    }
}

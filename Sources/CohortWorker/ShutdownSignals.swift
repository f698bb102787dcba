import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// A service that can be told to stop at once, from any thread, while it drains: what a
/// second SIGTERM does to it in a group made by ``ServiceGroup/init(cohortServices:logger:)``.
public protocol StoppableService: Service {
    /// Stops the service at once; its `run()` returns soon after. Safe from any thread, at any
    /// time, more than once.
    func stop()
}

/// SIGTERM and SIGINT after the first, for a `ServiceGroup` of Cohort services: the group's
/// own signal handling turns the first into a graceful shutdown (a ``Worker`` drains); this
/// service turns the second into ``StoppableService/stop()`` of every service it was given (a
/// ``Worker`` stops at once, handing back what still runs), which a `ServiceGroup` alone would
/// ignore, and the third into an immediate exit with status 128 + the signal's number.
///
/// ``ServiceGroup/init(cohortServices:logger:)`` puts it first in the group, so that it is
/// shut down last, once the others have stopped.
public struct ShutdownSignals: Service {
    /// The signals counted: SIGTERM and SIGINT.
    public static let signals: [UnixSignal] = [.sigterm, .sigint]

    private let stoppable: [any StoppableService]

    /// Counts signals for `stoppable`, the services a second signal stops.
    public init(stopping stoppable: [any StoppableService]) {
        self.stoppable = stoppable
    }

    /// Counts the signals until its graceful shutdown (or cancellation).
    public func run() async throws {
        var seen = 0
        for await signal in await UnixSignalsSequence(trapping: Self.signals).cancelOnGracefulShutdown() {
            seen += 1
            if seen == 2 {
                for service in stoppable { service.stop() }
            } else if seen >= 3 {
                exit(128 + signal.rawValue)
            }
        }
    }
}

extension ServiceGroup {
    /// A group that runs `services` the way Cohort's own processes run: the first SIGTERM or
    /// SIGINT shuts them down gracefully, last first (a ``Worker`` drains: no new work,
    /// running attempts finish), a second stops every ``StoppableService`` among them at once
    /// (a ``Worker`` hands back what still runs), a third exits the process. A service that
    /// returns on its own (a worker drained by `cohort drain`) shuts the others down
    /// gracefully. `run()` returns once every service has stopped.
    ///
    /// ```swift
    /// try await ServiceGroup(cohortServices: [worker], logger: logger).run()
    /// ```
    public init(cohortServices services: [any Service], logger: Logger) {
        let signals = ShutdownSignals(stopping: services.compactMap { $0 as? any StoppableService })
        self.init(
            configuration: ServiceGroupConfiguration(
                services: [ServiceGroupConfiguration.ServiceConfiguration(service: signals)]
                    + services.map {
                        ServiceGroupConfiguration.ServiceConfiguration(
                            service: $0, successTerminationBehavior: .gracefullyShutdownGroup)
                    },
                gracefulShutdownSignals: ShutdownSignals.signals,
                logger: logger))
    }
}

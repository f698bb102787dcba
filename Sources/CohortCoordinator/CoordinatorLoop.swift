import CohortCore
import CohortWire
import Foundation
import Logging
import ZeroMQ

/// The coordinator's I/O loop: owns the ROUTER socket on its thread, feeds decoded messages
/// to the scheduler, and carries out the actions it returns.
///
/// Not thread-safe: created on any thread, then used only by the loop thread (`run()`).
final class CoordinatorLoop {
    let configuration: CoordinatorConfiguration
    let logger: Logger
    let mailbox: Mailbox<LoopCommand>
    let stats: CoordinatorStatistics
    let onBound: @Sendable (String) -> Void
    let codec: WireCodec

    init(
        configuration: CoordinatorConfiguration, logger: Logger, mailbox: Mailbox<LoopCommand>,
        stats: CoordinatorStatistics, onBound: @escaping @Sendable (String) -> Void
    ) {
        self.configuration = configuration
        self.logger = logger
        self.mailbox = mailbox
        self.stats = stats
        self.onBound = onBound
        self.codec = WireCodec(maxFrameSize: configuration.maxFrameSize)
    }

    /// Binds, serves until a stop command, then closes. Runs on the loop thread.
    func run() throws {
        let context = try Context(ioThreads: 1, defaultLinger: configuration.linger)
        defer { context.terminate() }
        let router = try context.socket(.router)
        defer { router.close() }
        try router.set(.routerMandatory, to: true)
        try router.bind(configuration.endpoint)
        let endpoint = try router.lastEndpoint
        announce(endpoint)

        let poller = Poller()
        let network = try poller.register(router)
        let commands = poller.register(mailbox.waker)
        var stopping = false
        while !stopping {
            try poller.poll(timeout: configuration.heartbeatInterval)
            if poller.isReadable(network) {
                while let message = try router.receiveFrames(wait: .never) {
                    stats.messagesReceived.bump()
                    _ = message
                }
            }
            if poller.isReadable(commands) {
                for command in mailbox.drain() {
                    switch command {
                    case .stop: stopping = true
                    }
                }
            }
        }
    }

    private func announce(_ endpoint: String) {
        logger.info("coordinator listening", metadata: ["endpoint": "\(endpoint)"])
        if configuration.printsListeningLine {
            let line = "cohort coordinator listening on \(endpoint)\n"
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        onBound(endpoint)
    }
}

import Dispatch

/// Waits for a duration, then succeeds. Cancelling it while it waits finishes it at once.
open class DelayProcedure: Procedure, @unchecked Sendable {
    // @unchecked Sendable: adds an immutable duration and a `Protected` timer; the rest is Procedure's.
    public let delay: Duration
    private let timer = Protected<DispatchWorkItem?>(nil)

    public init(by delay: Duration) {
        self.delay = delay
        super.init()
    }

    open override func execute() {
        guard delay > .zero else {
            finish()
            return
        }
        let item = DispatchWorkItem { [weak self] in self?.finish() }
        timer.value = item
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.dispatchInterval, execute: item)
    }

    open override func procedureDidCancel(with reason: (any Error)?) {
        timer.value?.cancel()
    }
}

extension Duration {
    /// The duration as a Dispatch interval, in nanoseconds.
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}

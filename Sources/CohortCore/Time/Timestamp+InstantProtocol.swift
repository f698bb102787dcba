/// `Timestamp` as an instant, so that state machines generic over `InstantProtocol` (the
/// client's session in CohortClientCore) run on the scheduler's time: the simulation drives
/// them with its simulated clock.
extension Timestamp: InstantProtocol {
    public func advanced(by duration: Duration) -> Timestamp {
        self + duration
    }

    public func duration(to other: Timestamp) -> Duration {
        other - self
    }
}

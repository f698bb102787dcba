import Testing
@testable import CohortWorker

@Test func defaultCoordinatorIsLoopbackPort7400() {
    #expect(WorkerConfiguration().coordinator == "tcp://127.0.0.1:7400")
}

import Procedures
import Testing

/// The README's ten-line example, kept compiling and correct.
@Test func readmeExampleRunsAndInjects() async throws {
    let queue = ProcedureQueue(maxConcurrentCount: 4)
    queue.exclusivityManager = LocalExclusivityManager()
    let fetch = ResultProcedure { "42" }
    let parse = TransformProcedure<String, Int> { Int($0)! }.injectResult(from: fetch)
    let report = BlockProcedure {}
    report.addDependency(parse)
    report.addCondition(MutuallyExclusive(category: "stdout"))
    queue.add([fetch, report])
    #expect(try await queue.run(parse) == 42)
    await queue.waitUntilAllFinished()
    #expect(report.outcome?.isSucceeded == true)
}

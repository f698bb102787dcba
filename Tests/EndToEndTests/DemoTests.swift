import Foundation
import Testing

extension EndToEnd {
    @Suite struct Demo {
        /// `cohort demo` exits 0 and leaves none of the processes it started behind.
        @Test func demoSucceedsAndLeavesNoProcessBehind() throws {
            let result = try cohort(["demo"], timeout: .seconds(180))
            #expect(result.status == 0, "\(result)")
            let pids = result.stdout.split(separator: "\n")
                .filter { $0.hasPrefix("cohort demo: started ") }
                .compactMap { line -> pid_t? in
                    guard let range = line.range(of: "(pid ") else { return nil }
                    return pid_t(line[range.upperBound...].prefix { $0.isNumber })
                }
            #expect(pids.count == 4, "a coordinator and three workers: \(result.stdout)")
            for pid in pids {
                #expect(kill(pid, 0) != 0 && errno == ESRCH, "process \(pid) is gone")
            }
            #expect(result.stdout.contains("everything behaved as expected"))
        }
    }
}

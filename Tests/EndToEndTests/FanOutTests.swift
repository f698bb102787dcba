import Foundation
import Testing

extension EndToEnd {
    @Suite struct FanOut {
        /// 200 `echo` children on 3 workers: all succeed, every worker runs some, and every
        /// output comes back through `cohort result`.
        @Test func twoHundredEchoChildrenSpreadOverThreeWorkers() throws {
            let cluster = try Cluster()
            defer { cluster.stop() }
            try cluster.addWorkers(3, slots: 4)

            let count = 200
            var spec = "name: echoes\nchildren:\n"
            for index in 0..<count {
                spec += "  - { name: e\(index), run: echo, with: { index: \(index), word: \"w-\(index)\" } }\n"
            }
            let (status, final) = try cluster.submitAndWait(spec, name: "echoes.yaml")
            #expect(status == 0)
            #expect(final.state == "succeeded")
            let children = final.children
            #expect(children.count == count)
            #expect(children.allSatisfy { $0.state == "succeeded" })
            let workers = Set(children.compactMap { $0["worker"] as? String })
            #expect(workers == ["w1", "w2", "w3"], "every worker ran some children: \(workers)")

            let group = try #require(final["id"] as? String)
            for index in 0..<count {
                let result = try cluster.cli(["result", group, "e\(index)", "--json"])
                #expect(result.status == 0, "\(result)")
                let output = try JSON.object(result.stdout)
                #expect(output["index"] as? Int == index)
                #expect(output["word"] as? String == "w-\(index)")
            }
        }
    }
}

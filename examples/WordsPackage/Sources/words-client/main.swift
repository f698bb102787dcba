import CohortClient
import Foundation
import WordKinds

let lines = ["the quick brown fox", "jumps over", "the lazy dog"]

var configuration = ClientConfiguration(coordinator: CommandLine.arguments.dropFirst().first ?? "tcp://127.0.0.1:7400")
configuration.strict = true  // refuse the group if no connected worker offers one of its kinds
do {
    try await CohortClient.withClient(configuration) { client in
        let spec = try GroupSpec("words", timeout: .seconds(60)) {
            for (index, line) in lines.enumerated() {
                try ChildSpec("count-\(index)", wordcount, Text(text: line))
            }
            try ChildSpec(
                "total", sum, Total(words: []),
                inject: lines.indices.map { index in
                    Injection(from: "count-\(index)", select: .key("words"), into: JSONPath.key("words").index(index))
                })
        }
        let group = try await client.submit(spec)
        for try await event in client.watch(group.id) { print(event) }
        let counts = try await client.result(of: "count-0", in: group.id, as: wordcount)
        let total = try await client.result(of: "total", in: group.id, as: sum)
        print("first line: \(counts.words) words; total: \(total) words")
    }
} catch let error as ClientError {
    FileHandle.standardError.write(Data("words-client: \(error)\n".utf8))
    exit(error.exitCode)
}

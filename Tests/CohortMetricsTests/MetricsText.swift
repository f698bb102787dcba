import Foundation

/// Reading Prometheus' text exposition format in tests.
enum MetricsText {
    /// The value of the series `series` (name and labels exactly as rendered, e.g.
    /// `cohort_children_finished_total{kind="shell",outcome="failed"}`), if present.
    static func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// Every label value of `label` among the series of `name`.
    static func labelValues(_ text: String, name: String, label: String) -> Set<String> {
        var values: Set<String> = []
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") {
            guard let range = line.range(of: "\(label)=\"") else { continue }
            let rest = line[range.upperBound...]
            if let end = rest.firstIndex(of: "\"") { values.insert(String(rest[..<end])) }
        }
        return values
    }
}

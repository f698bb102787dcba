import CohortSpec
import CohortWire
import Foundation

extension CohortClient {
    /// The kind of the probe's gate, which no worker offers, so that nothing in the probe starts.
    static let strictGateKind = "cohort-strict-check-gate"

    /// Refuses `spec` (``ClientError/Code/noCapableWorker``) if no ready worker offers one of
    /// its kinds with the labels its children require (``ClientConfiguration/strict``).
    ///
    /// The coordinator's `workers` reply does not list the kinds a worker offers, so this asks
    /// its placement instead: it submits a probe group with one child per kind and labels, all
    /// waiting for a gate child whose kind no worker offers (so none is ever dispatched),
    /// reads the receipt's warnings, and cancels the probe.
    func checkOffered(_ spec: GroupSpec) async throws(ClientError) {
        var needs: [Need] = []
        Self.collect(spec.children, requires: spec.requires, into: &needs)
        guard !needs.isEmpty else { return }
        var children = [ChildSpec("gate", run: Self.strictGateKind)]
        for (index, need) in needs.enumerated() {
            children.append(ChildSpec("need-\(index)", run: need.kind, after: ["gate"], requires: need.labels))
        }
        let probe = GroupSpec("strict-check", onChildFailure: .cancelGroup, children: children)
        let receipt = try await send(
            Submission(
                groupID: "strict-check-\(UUID().uuidString.lowercased())", document: probe.specText(pretty: false),
                format: .json, sourceName: nil))
        try await cancel(receipt.id, reason: "strict check done")
        let missing = receipt.warnings.filter { !$0.contains("\"\(Self.strictGateKind)\"") }
        guard missing.isEmpty else {
            throw ClientError(
                .noCapableWorker, "refused (strict): \(missing.joined(separator: "; ")); nothing was submitted")
        }
    }

    /// A kind and the labels a child that runs it requires.
    struct Need: Hashable {
        var kind: String
        var labels: [String]
    }

    /// Every procedure's kind and labels (its own, its groups'), once each, in spec order.
    private static func collect(_ children: [ChildSpec], requires: [String], into needs: inout [Need]) {
        for child in children {
            let labels = Array(Set(requires + child.requires)).sorted()
            switch child.body {
            case .procedure(let procedure):
                let need = Need(kind: procedure.run, labels: labels)
                if !needs.contains(need) { needs.append(need) }
            case .group(let group):
                collect(group.children, requires: labels, into: &needs)
            }
        }
    }
}

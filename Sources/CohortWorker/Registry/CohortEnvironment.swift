/// The `COHORT_*` variables every process an attempt starts sees (docs/worker.md).
enum CohortEnvironment {
    /// `COHORT_GROUP`, `COHORT_CHILD`, `COHORT_ATTEMPT`, `COHORT_WORKER`, and
    /// `COHORT_FENCE_<CATEGORY>` for each category held.
    ///
    /// With `coordinator`: `COHORT_COORDINATOR` (the endpoint the worker uses),
    /// `COHORT_ATTEMPT_TOKEN` (the attempt's token, when the coordinator minted one) and, under
    /// CURVE, `COHORT_SERVER_KEY` (the coordinator's public key): what a `cohort` command the
    /// attempt runs needs to read, cancel or grow its own group.
    static func variables(
        group: String, child: String, attempt: Int, worker: String, fencingTokens: [String: UInt64],
        coordinator: CoordinatorAccess? = nil
    ) -> [String: String] {
        var variables = [
            "COHORT_GROUP": group,
            "COHORT_CHILD": child,
            "COHORT_ATTEMPT": String(attempt),
            "COHORT_WORKER": worker,
        ]
        if let coordinator {
            variables["COHORT_COORDINATOR"] = coordinator.endpoint
            if let token = coordinator.attemptToken { variables["COHORT_ATTEMPT_TOKEN"] = token }
            if let key = coordinator.publicKey { variables["COHORT_SERVER_KEY"] = key }
        }
        for (category, token) in fencingTokens {
            variables[fenceVariable(for: category)] = String(token)
        }
        return variables
    }

    /// `COHORT_FENCE_` and the category upper-cased, every character other than an ASCII
    /// letter or digit written `_`: `db-main` → `COHORT_FENCE_DB_MAIN`.
    static func fenceVariable(for category: String) -> String {
        var name = "COHORT_FENCE_"
        for scalar in category.unicodeScalars {
            switch scalar.value {
            case 0x30...0x39, 0x41...0x5A: name.unicodeScalars.append(scalar)
            case 0x61...0x7A: name.unicodeScalars.append(Unicode.Scalar(scalar.value - 0x20)!)
            default: name.append("_")
            }
        }
        return name
    }
}

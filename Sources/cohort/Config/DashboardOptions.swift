import CohortDashboard

/// The dashboard's settings of `cohort coordinator` (docs/http.md): where it listens and the
/// tokens file.
struct DashboardOptions {
    /// `nil`: off.
    var address: DashboardAddress? = .defaultAddress
    /// Whether `address` is the built-in default (nobody asked for it): a busy default port
    /// only warns.
    var isDefault = true
    /// `--http-tokens FILE`, config key `httpTokens`.
    var tokensFile: String?

    /// The tokens file read, and the rule that a dashboard other machines can reach needs tokens.
    /// - Throws: ``DashboardSettingsError`` naming the setting and what is wrong.
    func tokens() throws(DashboardSettingsError) -> AccessTokens {
        let tokens =
            try tokensFile.map { path throws(DashboardSettingsError) in try AccessTokens.load(path: path) }
            ?? AccessTokens()
        if let address, !address.isLoopback, tokens.isEmpty {
            throw DashboardSettingsError(
                "http: the dashboard on \(address) could be reached from other machines, and it has no tokens: "
                    + "give --http-tokens FILE (config key httpTokens; docs/http.md), bind it to 127.0.0.1, "
                    + "or turn it off with --http off")
        }
        return tokens
    }
}

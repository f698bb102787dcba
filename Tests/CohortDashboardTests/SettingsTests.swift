import Foundation
import Testing

@testable import CohortDashboard

struct SettingsTests {
    @Test func addressesParseAndSayWhetherTheyAreLoopback() throws {
        #expect(try DashboardAddress.parse("127.0.0.1:0") == DashboardAddress(host: "127.0.0.1", port: 0))
        #expect(try DashboardAddress.parse("off") == nil)
        #expect(try DashboardAddress.parse("[::1]:7401")?.isLoopback == true)
        #expect(try DashboardAddress.parse("0.0.0.0:80")?.isLoopback == false)
        #expect(DashboardAddress.defaultAddress.url == "http://127.0.0.1:7401/")
        #expect(throws: DashboardSettingsError.self) { try DashboardAddress.parse("localhost") }
        #expect(throws: DashboardSettingsError.self) { try DashboardAddress.parse("127.0.0.1:99999") }
    }

    @Test func tokensFileNamesTheLineAtFault() throws {
        let tokens = try AccessTokens.parse(
            "# role name token\nadmin alice 0123456789abcdef0123\n\nviewer bob fedcba9876543210fedc\n", origin: "t")
        #expect(tokens.tokens.map(\.name) == ["alice", "bob"])
        #expect(tokens.token(secret: "0123456789abcdef0123")?.role == .admin)
        #expect(tokens.token(secret: "0123456789abcdef012") == nil)
        do {
            _ = try AccessTokens.parse(
                "admin alice 0123456789abcdef0123\nroot carol 0123456789abcdef9999\n", origin: "t")
            Issue.record("an unknown role was accepted")
        } catch {
            #expect(error.description == "t:2: unknown role \"root\" (roles: viewer, client, admin)")
        }
        #expect(throws: DashboardSettingsError.self) { try AccessTokens.parse("admin alice short\n", origin: "t") }
        #expect(throws: DashboardSettingsError.self) { try AccessTokens.parse("admin alice\n", origin: "t") }
    }

    /// The pages the binary serves are the ones in the repository (scripts/embed-pages).
    @Test func embeddedPagesMatchTheRepository() throws {
        let pages = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/CohortDashboard/Pages")
        let names = try FileManager.default.contentsOfDirectory(atPath: pages.path).sorted()
        #expect(names == EmbeddedPages.files.keys.sorted(), "run scripts/embed-pages")
        for name in names {
            let text = try String(contentsOf: pages.appendingPathComponent(name), encoding: .utf8)
            let embedded = EmbeddedPages.files[name].map { $0 + "\n" }
            #expect(embedded == text, "\(name) changed since scripts/embed-pages ran")
        }
    }
}

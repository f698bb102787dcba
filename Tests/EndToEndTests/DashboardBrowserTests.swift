import Foundation
import Testing

/// The dashboard in a real browser: a real cluster (`cohort coordinator --http 127.0.0.1:0` and
/// a worker), headless Chromium driven through the DevTools protocol. Chromium is required:
/// without it the test fails and says how to install it (CI installs it with scripts/bootstrap).
///
/// With `COHORT_SCREENSHOTS_DIR` set (scripts/screenshots), it also saves the group page and
/// the workers page there, as docs/dashboard-group.png and docs/dashboard-workers.png are made.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct DashboardBrowserTests {
    static let adminToken = "e2e-admin-token-0123456789"
    static let viewerToken = "e2e-viewer-token-0123456789"

    /// A release with a nested group, dependencies and a lock; `build/linux` finishes about
    /// 21 s after the submission (long enough to be seen running on a loaded machine), the
    /// rest runs until cancelled.
    static let spec = """
        name: nightly-release
        children:
          - { name: checkout, run: sleep, with: { seconds: 1 } }
          - name: build
            after: [checkout]
            group:
              children:
                - { name: linux, run: sleep, with: { seconds: 20 } }
                - { name: macos, run: sleep, with: { seconds: 600 } }
          - { name: docs, run: sleep, after: [checkout], exclusive: [bucket], with: { seconds: 600 } }
          - { name: notes, run: sleep, after: [checkout], exclusive: [bucket], with: { seconds: 600 } }
          - { name: publish, run: echo, after: [build, docs, notes], with: { value: done } }
        """

    @Test func groupListPageUpdatesLiveAndCancelNeedsTheAdminToken() async throws {
        let tokens = try Scratch.write(
            "admin e2e-admin \(Self.adminToken)\nviewer e2e-viewer \(Self.viewerToken)\n", name: "http-tokens")
        let cluster = try Cluster(coordinatorArguments: ["--http", "127.0.0.1:0", "--http-tokens", tokens])
        defer { cluster.stop() }
        let prefix = "cohort coordinator dashboard on "
        let url = try cluster.coordinator.waitForLine(timeout: .seconds(20)) { line in
            line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
        }
        #expect(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/"))
        try cluster.addWorker(name: "builder-1", labels: ["linux"], slots: 4)

        try await Browser.with("dashboard") { browser in
            let group = try cluster.submit(Self.spec, name: "nightly-release.yaml")

            // The list shows the running group.
            try await browser.navigate(url)
            try await browser.waitFor(
                "the group list to show \(group) running",
                "document.querySelector('#groups tr[data-group=\"\(group)\"]')?.dataset.state === 'running'")

            // Its page: the node of build/linux is not finished when first seen, then turns
            // succeeded without a reload (the marker set after loading survives).
            try await browser.navigate("\(url)group?id=\(group)")
            _ = try await browser.evaluate("window.__e2eMarker = 'no reload'")
            let node = "document.querySelector('#graph-svg [data-path=\"build/linux\"]')?.getAttribute('data-state')"
            let first = try await browser.value("the node build/linux", node)
            #expect(
                !["succeeded", "failed", "cancelled"].contains(first), "build/linux had already finished: \(first)")
            try await browser.waitFor("build/linux to turn succeeded", "\(node) === 'succeeded'", timeout: .seconds(60))
            #expect(try await browser.evaluate("window.__e2eMarker") as? String == "no reload")
            #expect(try await browser.evaluate("document.querySelectorAll('#graph-svg .box').length") as? Int == 1)
            #expect(try await browser.evaluate("document.querySelectorAll('#graph-svg .edge').length") as? Int == 6)
            if let directory = ProcessInfo.processInfo.environment["COHORT_SCREENSHOTS_DIR"] {
                _ = try await browser.evaluate(
                    "document.querySelector('#graph-svg [data-path=\"build/linux\"]').dispatchEvent(new MouseEvent('click'))"
                )
                try await Task.sleep(for: .milliseconds(500))
                try await browser.screenshot(to: "\(directory)/dashboard-group.png")
            }

            // Without a token, and with a viewer's, no cancel button.
            #expect(try await browser.evaluate("document.getElementById('cancel-group').hidden") as? Bool == true)
            #expect(try await browser.evaluate("document.querySelectorAll('button.cancel-child').length") as? Int == 0)
            try await useToken(browser, Self.viewerToken)
            // The role is `viewer` without a token too: wait for the viewer's name.
            try await browser.waitFor(
                "the page to know the viewer", "document.getElementById('who').textContent.includes('e2e-viewer')")
            #expect(try await browser.evaluate("document.getElementById('cancel-group').hidden") as? Bool == true)
            #expect(try await browser.evaluate("document.querySelectorAll('button.cancel-child').length") as? Int == 0)

            // With the admin's, the button is there and cancels the group.
            try await useToken(browser, Self.adminToken)
            try await browser.waitFor(
                "the cancel button", "document.getElementById('cancel-group').hidden === false")
            #expect(
                try await browser.evaluate("document.querySelectorAll('button.cancel-child').length") as? Int ?? 0 > 0)
            _ = try await browser.evaluate(
                "window.confirm = () => true; document.getElementById('cancel-group').click()")
            try await waitForState(cluster, group, "cancelled")
            try await browser.waitFor(
                "the page to show the group cancelled",
                "document.getElementById('group-state').dataset.state === 'cancelled'")
            #expect(try await browser.evaluate("window.__e2eMarker") as? String == "no reload")

            if let directory = ProcessInfo.processInfo.environment["COHORT_SCREENSHOTS_DIR"] {
                try await screenshotWorkersPage(browser, cluster: cluster, url: url, directory: directory)
            }
        }
    }

    /// The workers page's lock table shows a counting lock as `held/limit` and every holder
    /// with its token.
    @Test func theLockTableShowsHeldOverLimit() async throws {
        let cluster = try Cluster(coordinatorArguments: ["--http", "127.0.0.1:0"])
        defer { cluster.stop() }
        let prefix = "cohort coordinator dashboard on "
        let url = try cluster.coordinator.waitForLine(timeout: .seconds(20)) { line in
            line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
        }
        try cluster.addWorker(name: "w1", slots: 4)
        let group = try cluster.submit(
            """
            name: quota
            limits: { api-quota: 2 }
            children:
              - { name: a, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
              - { name: b, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
              - { name: c, run: sleep, exclusive: [api-quota], with: { seconds: 60 } }
            """, name: "quota.yaml")
        try await Browser.with("dashboard-locks") { browser in
            try await browser.navigate("\(url)workers")
            let row = "document.querySelector('#locks tr[data-category=\"api-quota\"]')"
            try await browser.waitFor(
                "api-quota to show 2/2", "\(row)?.querySelector('td.held')?.textContent === '2/2'",
                timeout: .seconds(30))
            #expect(try await browser.evaluate("\(row).querySelectorAll('ul li').length") as? Int == 2)
            #expect(try await browser.evaluate("\(row).querySelectorAll('ol li').length") as? Int == 1)
            #expect(try await browser.evaluate("\(row).textContent.includes('token ')") as? Bool == true)
        }
        _ = try cluster.cli(["cancel", group])
    }

    /// A child's log on its group page: the newest 500 lines at once, earlier ones on demand,
    /// a line written later appears without a reload, Pause holds new lines back and Resume
    /// brings them, none twice; stderr is told apart.
    @Test func aChildsLogShowsLiveWithEarlierLinesOnDemandAndPause() async throws {
        let cluster = try Cluster(coordinatorArguments: ["--http", "127.0.0.1:0"])
        defer { cluster.stop() }
        let prefix = "cohort coordinator dashboard on "
        let url = try cluster.coordinator.waitForLine(timeout: .seconds(20)) { line in
            line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : nil
        }
        try cluster.addWorker(name: "w1", slots: 2)
        let first = Scratch.file("first")
        let second = Scratch.file("second")
        let script =
            "seq 1 1200; echo err-line >&2; while [ ! -e \(first) ]; do sleep 0.05; done; echo after-first; "
            + "while [ ! -e \(second) ]; do sleep 0.05; done; echo after-second"
        let group = try cluster.submit(
            """
            name: logged
            children:
              - { name: c, run: shell, with: { command: ["sh", "-c", "\(script)"] } }
            """, name: "logged.yaml")
        // The 1201 lines written before the first flag are stored before the page opens.
        try EndToEnd.Failures.waitUntil("1201 lines to be stored") {
            try cluster.cli(["logs", group, "c"]).stdout.split(separator: "\n").count == 1201
        }
        try await Browser.with("dashboard-logs") { browser in
            try await browser.navigate("\(url)group?id=\(group)")
            _ = try await browser.evaluate("window.__e2eMarker = 'no reload'")
            try await browser.waitFor(
                "the child's row", "document.querySelector('#children tr[data-path=\"c\"]') !== null")
            _ = try await browser.evaluate("document.querySelector('#children tr[data-path=\"c\"]').click()")
            let lines = "document.querySelectorAll('#log-lines span.line')"
            try await browser.waitFor("the last 500 lines", "\(lines).length === 500")
            #expect(try await browser.evaluate("\(lines)[0].dataset.seq") as? String == "702")
            #expect(try await browser.evaluate("document.querySelector('.log-earlier').hidden") as? Bool == false)

            _ = try await browser.evaluate("document.getElementById('log-earlier').click()")
            try await browser.waitFor("500 earlier lines", "\(lines).length === 1000")
            _ = try await browser.evaluate("document.getElementById('log-earlier').click()")
            try await browser.waitFor("every line", "\(lines).length === 1201")
            #expect(try await browser.evaluate("\(lines)[0].dataset.seq") as? String == "1")
            // stdout and stderr are two pipes: err-line is where the worker read it.
            #expect(
                try await browser.evaluate("document.querySelector('#log-lines .stderr')?.textContent") as? String
                    == "err-line\n")
            #expect(try await browser.evaluate("document.querySelector('.log-earlier').hidden") as? Bool == true)

            // Written after the page opened: it appears, live.
            _ = FileManager.default.createFile(atPath: first, contents: Data())
            try await browser.waitFor(
                "after-first, live", "document.getElementById('log-lines').textContent.includes('after-first')")

            // Paused, a new line stays out; resumed, it comes once, and the attempt's end.
            _ = try await browser.evaluate("document.getElementById('log-pause').click()")
            try await browser.waitFor("paused", "document.getElementById('log-status').textContent === 'paused'")
            _ = FileManager.default.createFile(atPath: second, contents: Data())
            try await waitForState(cluster, group, "succeeded")
            #expect(
                try await browser.evaluate("document.getElementById('log-lines').textContent.includes('after-second')")
                    as? Bool == false, "held back while paused")
            _ = try await browser.evaluate("document.getElementById('log-pause').click()")
            try await browser.waitFor(
                "the attempt's end", "document.getElementById('log-status').textContent.includes('succeeded')")
            #expect(try await browser.evaluate("\(lines).length") as? Int == 1203)
            let texts = try await browser.evaluate("Array.from(\(lines)).slice(-2).map(s => s.textContent).join('')")
            #expect(texts as? String == "after-first\nafter-second\n")
            #expect(try await browser.evaluate("document.getElementById('log-attempt').options.length") as? Int == 2)
            #expect(try await browser.evaluate("window.__e2eMarker") as? String == "no reload")
        }
    }

    private func useToken(_ browser: Browser, _ token: String) async throws {
        _ = try await browser.evaluate(
            "document.getElementById('token').value = '\(token)'; document.getElementById('token-save').click()")
    }

    /// Waits until `cohort status GROUP --json` says `state`.
    private func waitForState(_ cluster: Cluster, _ group: String, _ state: String) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        var last: [String: Any] = [:]
        while ContinuousClock.now < deadline {
            last = try cluster.status(group)
            if last["state"] as? String == state { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TestFailure("group \(group) did not end \(state) per the coordinator; last status: \(last)")
    }

    /// A fresh group holding a lock with a waiter, seen on the workers page (for the docs).
    private func screenshotWorkersPage(_ browser: Browser, cluster: Cluster, url: String, directory: String)
        async throws
    {
        let group = try cluster.submit(Self.spec, name: "nightly-release.yaml")
        try await browser.navigate("\(url)workers")
        try await browser.waitFor(
            "a lock holder and waiter", "document.querySelectorAll('#locks ol li').length >= 1", timeout: .seconds(30))
        try await Task.sleep(for: .milliseconds(1500))
        try await browser.screenshot(to: "\(directory)/dashboard-workers.png")
        try await browser.navigate("\(url)group?id=\(group)")
        try await browser.waitFor(
            "build/linux to succeed",
            "document.querySelector('#graph-svg [data-path=\"build/linux\"]')?.getAttribute('data-state') === 'succeeded'",
            timeout: .seconds(60))
        _ = try await browser.evaluate(
            "document.querySelector('#graph-svg [data-path=\"build/linux\"]').dispatchEvent(new MouseEvent('click'))")
        try await Task.sleep(for: .milliseconds(800))
        try await browser.screenshot(to: "\(directory)/dashboard-group.png")
        _ = try cluster.cli(["cancel", group])
    }
}

import CohortTestSupport
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization
import Testing

/// Headless Chromium driven through the Chrome DevTools Protocol over a WebSocket, for the
/// dashboard's browser tests.
///
/// Chromium is started as a ``Subprocess`` (stopped by pid, with every process it started, by
/// ``stop()``), with a profile of its own and `--remote-debugging-port=0`; the DevTools
/// address is read from its stderr (`DevTools listening on ws://…`). One page is opened and
/// attached in flattened mode, so every command goes over the one browser connection.
final class Browser: @unchecked Sendable {
    // @unchecked: used from one test at a time; `devTools` is set once in `start`.
    let process: Subprocess
    let profile: String
    private let devTools: DevTools
    private let session: String

    /// Debian's `chromium` (or `chromium-browser`, `google-chrome`), or nil.
    static var executable: String? {
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
                let path = "\(directory)/\(name)"
                if FileManager.default.isExecutableFile(atPath: path) { return path }
            }
        }
        return nil
    }

    /// Starts Chromium and opens a blank page.
    /// - Throws: ``TestFailure`` when Chromium is missing (install it: scripts/bootstrap) or
    ///   does not offer DevTools in time.
    static func start(width: Int = 1400, height: Int = 1000) async throws -> Browser {
        guard let executable else {
            throw TestFailure(
                "the browser tests need Chromium: run scripts/bootstrap (Debian: apt-get install chromium; "
                    + "macOS: brew install --cask chromium)")
        }
        let profile = Scratch.file("chromium-profile")
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        let process = try Subprocess(
            executable,
            [
                "--headless=new", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
                "--remote-allow-origins=*",
                "--user-data-dir=\(profile)", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--window-size=\(width),\(height)", "about:blank",
            ], name: "chromium")
        do {
            let address = try Self.devToolsAddress(process)
            let devTools = try await DevTools.connect(address)
            let created = try await devTools.send("Target.createTarget", ["url": "about:blank"])
            guard let target = created["targetId"] as? String else { throw TestFailure("no targetId in \(created)") }
            let attached = try await devTools.send("Target.attachToTarget", ["targetId": target, "flatten": true])
            guard let session = attached["sessionId"] as? String else {
                throw TestFailure("no sessionId in \(attached)")
            }
            let browser = Browser(process: process, profile: profile, devTools: devTools, session: session)
            _ = try await browser.command("Page.enable")
            _ = try await browser.command("Runtime.enable")
            _ = try await browser.command(
                "Emulation.setDeviceMetricsOverride",
                ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": false])
            return browser
        } catch {
            process.stop()
            throw error
        }
    }

    private init(process: Subprocess, profile: String, devTools: DevTools, session: String) {
        self.process = process
        self.profile = profile
        self.devTools = devTools
        self.session = session
    }

    /// `ws://127.0.0.1:PORT/devtools/browser/ID`, from Chromium's stderr.
    private static func devToolsAddress(_ process: Subprocess) throws -> String {
        let prefix = "DevTools listening on "
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            for line in process.stderr.split(separator: "\n") where line.hasPrefix(prefix) {
                return String(line.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
            }
            if !process.isRunning {
                throw TestFailure("chromium exited before offering DevTools; stderr:\n\(process.stderr)")
            }
            usleep(20_000)
        }
        throw TestFailure("chromium did not offer DevTools within 30 s; stderr:\n\(process.stderr)")
    }

    /// A command to the page's session; its `result`.
    @discardableResult
    func command(_ method: String, _ parameters: [String: Any] = [:]) async throws -> [String: Any] {
        try await devTools.send(method, parameters, session: session)
    }

    /// Opens `url` and waits until the document has loaded.
    func navigate(_ url: String) async throws {
        let result = try await command("Page.navigate", ["url": url])
        if let error = result["errorText"] as? String { throw TestFailure("cannot open \(url): \(error)") }
        try await waitFor("\(url) to load", "document.readyState === 'complete'")
    }

    /// Evaluates `expression` in the page (promises awaited); its value as JSON gives it.
    func evaluate(_ expression: String) async throws -> Any? {
        let result = try await command(
            "Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] as? [String: Any] {
            let text = (exception["exception"] as? [String: Any])?["description"] as? String ?? "\(exception)"
            throw TestFailure("the page threw evaluating \(expression): \(text)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Polls `expression` until it is `true`, within `timeout`.
    func waitFor(_ what: String, _ expression: String, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await evaluate(expression) as? Bool == true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("timed out after \(timeout) waiting for \(what) (\(expression))")
    }

    /// Polls `expression` until it gives a string, within `timeout`; returns it.
    func value(_ what: String, _ expression: String, timeout: Duration = .seconds(20)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let value = try await evaluate(expression) as? String { return value }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("timed out after \(timeout) waiting for \(what) (\(expression))")
    }

    /// Saves a PNG of the page to `path`.
    func screenshot(to path: String) async throws {
        let result = try await command("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": false])
        guard let base64 = result["data"] as? String, let data = Data(base64Encoded: base64) else {
            throw TestFailure("Page.captureScreenshot returned no image")
        }
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Closes the DevTools connection and stops Chromium and what it started, by pid.
    func stop() async {
        await devTools.close()
        process.stop(grace: .seconds(3))
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Runs `body` with a browser, and stops the browser however it ends. On failure, a
    /// screenshot is kept in a directory outside the test's scratch space, and its path printed.
    static func with(_ label: String, _ body: (Browser) async throws -> Void) async throws {
        let browser = try await Browser.start()
        do {
            try await body(browser)
        } catch {
            let path =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "cohort-browser-failures/\(label)-\(getpid())-\(UUID().uuidString.prefix(6)).png"
                ).path
            if (try? await browser.screenshot(to: path)) != nil {
                print("browser test \(label) failed; screenshot: \(path)")
                Issue.record("screenshot of the failing page: \(path)")
            }
            await browser.stop()
            throw error
        }
        await browser.stop()
    }
}

/// One WebSocket connection to Chromium's DevTools: commands by id, answers matched by id.
final class DevTools: Sendable {
    private struct State {
        var nextID = 0
        var pending: [Int: CheckedContinuation<String, any Error>] = [:]
        var writer: WebSocketOutboundWriter?
        var closed = false
    }

    private let state = Mutex(State())
    private let connection = Mutex<Task<Void, Never>?>(nil)
    private let failure = Mutex<String?>(nil)

    static func connect(_ address: String) async throws -> DevTools {
        let devTools = DevTools()
        let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
        var logger = Logger(label: "test.devtools")
        logger.logLevel = .error
        let task = Task {
            do {
                try await WebSocketClient.connect(
                    url: address, configuration: WebSocketClientConfiguration(maxFrameSize: 1 << 26), logger: logger
                ) { inbound, outbound, _ in
                    devTools.state.withLock { $0.writer = outbound }
                    readyContinuation.yield()
                    for try await message in inbound.messages(maxSize: 1 << 26) {
                        if case .text(let text) = message { devTools.receive(text) }
                    }
                }
            } catch {
                devTools.failure.withLock { $0 = "\(error)" }
                devTools.failAll("the DevTools connection failed: \(error)")
            }
            readyContinuation.finish()
            devTools.failAll("the DevTools connection closed")
        }
        devTools.connection.withLock { $0 = task }
        try await within(.seconds(20), "the DevTools connection") {
            for await _ in ready { return }
            throw TestFailure(
                "could not connect to DevTools at \(address): \(devTools.failure.withLock { $0 } ?? "closed")")
        }
        return devTools
    }

    /// Sends a command and waits (20 s at most) for its answer's `result`.
    func send(_ method: String, _ parameters: [String: Any], session: String? = nil) async throws -> [String: Any] {
        var message: [String: Any] = ["method": method, "params": parameters]
        if let session { message["sessionId"] = session }
        let (id, writer) = try state.withLock { state in
            guard let writer = state.writer, !state.closed else { throw TestFailure("DevTools is not connected") }
            state.nextID += 1
            return (state.nextID, writer)
        }
        message["id"] = id
        let text = String(decoding: try JSONSerialization.data(withJSONObject: message), as: UTF8.self)
        let answer = try await within(.seconds(20), "DevTools to answer \(method)") {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
                let failed = self.state.withLock { state -> Bool in
                    if state.closed { return true }
                    state.pending[id] = continuation
                    return false
                }
                if failed {
                    continuation.resume(throwing: TestFailure("DevTools closed"))
                    return
                }
                Task {
                    do {
                        try await writer.write(.text(text))
                    } catch {
                        self.state.withLock { $0.pending.removeValue(forKey: id) }?.resume(throwing: error)
                    }
                }
            }
        }
        guard let object = try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any] else {
            throw TestFailure("DevTools answered \(method) with \(answer)")
        }
        if let error = object["error"] as? [String: Any] {
            throw TestFailure("DevTools refused \(method): \(error["message"] ?? error)")
        }
        return object["result"] as? [String: Any] ?? [:]
    }

    private func receive(_ text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let id = object["id"] as? Int
        else { return }  // an event
        state.withLock { $0.pending.removeValue(forKey: id) }?.resume(returning: text)
    }

    private func failAll(_ reason: String) {
        let pending = state.withLock { state in
            state.closed = true
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        for continuation in pending { continuation.resume(throwing: TestFailure(reason)) }
    }

    func close() async {
        let writer = state.withLock { $0.writer }
        try? await writer?.close(.normalClosure, reason: nil)
        let task = connection.withLock { $0 }
        task?.cancel()
        _ = await task?.value
    }
}

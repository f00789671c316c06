import Foundation
import Testing

@testable import CourierTesting

@Suite struct NginxServerTests {
    /// Runs `/usr/bin/curl` with `arguments`; returns its exit status and standard output.
    private func curl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let result = try await offPool {
            try ChildProcess.run(
                "/usr/bin/curl", ["-sS", "--max-time", "10", "--noproxy", "*"] + arguments, capture: .capture)
        }
        return (result.status, String(decoding: result.output, as: UTF8.self))
    }

    private func makeRoot() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-root-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("hello from nginx\n".utf8).write(to: root.appendingPathComponent("hello.txt"))
        return root
    }

    @Test func servesHTTP2OverTLSWithTheTestCA() async throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await offPool { try NginxServer.start(tls: true, http2: true, root: root) }
        defer { nginx.stop() }
        let caBundle = try #require(nginx.caBundlePath)
        #expect(nginx.baseURL.scheme == "https")

        let ok = try await curl([
            "--cacert", caBundle, "-w", "|%{http_version}", nginx.url("/hello.txt").absoluteString,
        ])
        #expect(ok.status == 0)
        #expect(ok.output == "hello from nginx\n|2")

        // localhost is in the certificate too.
        let byName = try await curl([
            "--cacert", caBundle, "-o", "/dev/null", "https://localhost:\(nginx.port)/hello.txt",
        ])
        #expect(byName.status == 0)

        // Without the CA the handshake fails verification (curl exit 60).
        let untrusted = try await curl(["-o", "/dev/null", nginx.url("/hello.txt").absoluteString])
        #expect(untrusted.status == 60)
    }

    @Test func plainHTTPAndExtraConfig() async throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await offPool {
            try NginxServer.start(
                tls: false, http2: false, root: root,
                extraConfig: "location = /teapot { return 418 \"short and stout\"; }")
        }
        defer { nginx.stop() }
        #expect(nginx.caBundlePath == nil)
        let teapot = try await curl(["-w", "|%{http_code}", nginx.url("/teapot").absoluteString])
        #expect(teapot.output == "short and stout|418")
    }

    @Test func stopKillsNginxAndCleansUp() async throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await offPool { try NginxServer.start(tls: true, http2: true, root: root) }
        let directory = nginx.directory
        #expect(kill(nginx.pid, 0) == 0)
        nginx.stop()
        nginx.stop()
        #expect(kill(nginx.pid, 0) == -1)
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(throws: RawHTTPError.self) { try RawHTTPConnection(port: nginx.port) }
    }

    @Test func childProcessReportsStatusOutputAndSignals() async throws {
        let ran = try ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"], capture: .capture)
        #expect(ran.status == 3)
        #expect(String(decoding: ran.output, as: UTF8.self) == "out\n")
        let errors = try ChildProcess.run("/bin/sh", ["-c", "echo err >&2"], capture: .capture, stderr: true)
        #expect(String(decoding: errors.output, as: UTF8.self) == "err\n")
        let sleeper = try ChildProcess.spawn("/bin/sleep", ["30"])
        #expect(ChildProcess.poll(sleeper.pid) == nil)
        kill(sleeper.pid, SIGTERM)
        #expect(ChildProcess.wait(sleeper.pid) == 128 + SIGTERM)
        #expect(ChildProcess.find("sh") != nil)
        #expect(ChildProcess.find("no-such-tool-\(UUID().uuidString)") == nil)
    }
}

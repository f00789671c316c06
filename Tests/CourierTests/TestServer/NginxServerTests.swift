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

    /// A child that outlives its time limit is killed, and `run` throws an error naming it
    /// instead of waiting for ever: with its output captured (the pipe never ends while the
    /// child lives), and without.
    @Test func aChildPastItsTimeLimitIsKilledAndNamed() async throws {
        for capture in [ChildProcess.Output.capture, .discard] {
            let started = ContinuousClock.now
            let error = try await offPool {
                #expect(throws: SocketError.self) {
                    try ChildProcess.run(
                        "/bin/sh", ["-c", "echo started; exec sleep 600"], capture: capture, timeout: .milliseconds(300)
                    )
                }
            }
            #expect(error?.code == ETIMEDOUT)
            #expect(error?.call.contains("/bin/sh -c") == true)
            #expect(ContinuousClock.now - started < TestTimeBound.scaled(.seconds(30)))
        }
    }

    /// A port someone else listens on is not the child's: the check that a started server
    /// (nginx, a proxy) is up asks whether the child itself holds the listening socket. It
    /// connected to the port instead, and a test server that took the port first answered for
    /// a proxy that had failed to bind (a proxy test got a 404).
    @Test func aPortAnotherListenerHoldsIsNotTheChilds() throws {
        let server = try TestServer()
        defer { server.stop() }
        let sleeper = try ChildProcess.spawn("/bin/sleep", ["30"])
        defer { ChildProcess.terminate(sleeper.pid) }
        #expect(!ChildProcess.waitUntilAccepting(port: server.port, pid: sleeper.pid, timeout: .milliseconds(200)))
        #expect(ChildProcess.listens(pid: getpid(), port: server.port))
        #expect(!ChildProcess.listens(pid: sleeper.pid, port: server.port))
    }

    /// A capture pipe is close-on-exec from the moment it is made: a child that another thread
    /// starts meanwhile never inherits its write end. (It was made close-on-exec only after the
    /// spawn, so a daemonized nginx started at that moment held it open, the reader waited for
    /// its end for ever, and the suite hung.) One thread captures the output of many short
    /// children while another lists the descriptors each of its own children was born with.
    @Test func aCapturePipeIsNeverInheritedByAnotherThreadsChild() async throws {
        let rounds = 200
        async let captured: Set<UInt64> = offPool {
            var inodes: Set<UInt64> = []
            for _ in 0..<rounds {
                let child = try ChildProcess.spawn("/bin/true", [], stdout: .capture)
                var info = stat()
                if fstat(child.output, &info) == 0 { inodes.insert(UInt64(info.st_ino)) }
                var byte: UInt8 = 0
                while read(child.output, &byte, 1) > 0 {}
                close(child.output)
                _ = ChildProcess.wait(child.pid)
            }
            return inodes
        }
        async let listed: [String] = offPool {
            try (0..<rounds).map { _ in
                let listing = try ChildProcess.run("/bin/ls", ["-l", "/proc/self/fd"], capture: .capture)
                return String(decoding: listing.output, as: UTF8.self)
            }
        }
        let (inodes, listings) = try await (captured, listed)
        #expect(inodes.count == rounds)
        #expect(listings.allSatisfy { $0.contains("pipe:[") }, "each listing shows its own capture pipe")
        let inherited = listings.filter { listing in inodes.contains { listing.contains("pipe:[\($0)]") } }
        #expect(inherited.count == 0, "children inherited another capture's pipe")
    }
}

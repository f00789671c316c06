import CourierLocking
import CourierTesting
import Foundation
import Testing

@testable import CourierRedis

/// A `redis-server` of the test's own, on a free loopback port, without persistence, in a
/// temporary folder; never a system-wide instance. Stop it (or let `deinit` do it).
final class RedisTestServer: Sendable {
    let port: Int
    let directory: String
    let password: String?
    private let process = LockedValue<pid_t?>(nil)

    /// A random 32-byte identity key for a fleet.
    static let identityKey: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }

    private init(password: String?) throws {
        directory = NSTemporaryDirectory() + "courier-redis-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.password = password
        port = try Self.freePort()
    }

    /// Starts a server and waits until it answers.
    static func make(password: String? = nil) async throws -> RedisTestServer {
        let server = try RedisTestServer(password: password)
        try await server.start()
        return server
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts (or restarts, on the same port) the server and waits until it answers PING.
    func start() async throws {
        var arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory,
            "--daemonize", "no", "--loglevel", "warning", "--logfile", directory + "/redis.log",
        ]
        if let password { arguments += ["--requirepass", password] }
        let child = try ChildProcess.spawn(Self.executable, arguments)
        process.withLock { $0 = child.pid }
        // The blocking wait runs on a thread of its own, never on the cooperative pool (two
        // threads on a two-core machine, shared with every other suite).
        let endpoint = endpoint()
        let ready = await withCheckedContinuation { continuation in
            Thread {
                let deadline = ContinuousClock.now + .seconds(10)
                let connection = RedisConnection(endpoint: endpoint)
                var answered = false
                while !answered, ContinuousClock.now < deadline {
                    answered = (try? connection.run([Data("PING".utf8)])) == .status("PONG")
                    if !answered { usleep(10_000) }
                }
                continuation.resume(returning: answered)
            }.start()
        }
        if ready { return }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "redis-server did not start"])
    }

    /// Stops the server (SIGTERM, then SIGKILL after five seconds) and reaps it.
    func stop() {
        process.withLock { process in
            guard let pid = process else { return }
            process = nil
            ChildProcess.terminate(pid)
        }
    }

    /// Freezes the server (SIGSTOP): it keeps its socket but answers nothing, like a hung Redis.
    func pause() {
        process.withLock { if let pid = $0 { kill(pid, SIGSTOP) } }
    }

    func resume() {
        process.withLock { if let pid = $0 { kill(pid, SIGCONT) } }
    }

    func endpoint() -> RedisConnection.Endpoint {
        RedisConnection.Endpoint(
            host: "127.0.0.1", port: port, username: nil, password: password, database: 0,
            connectTimeout: .milliseconds(200), commandTimeout: .milliseconds(500))
    }

    /// A fleet on this server, as another process would make it. The default command timeout
    /// is scaled under the sanitizers: a command also fails when it waited that long in its
    /// client's queue, and ten times slower the suite's bursts of commands would.
    func fleet(
        commandTimeout: Duration = TestTimeBound.scaled(.milliseconds(200)), retryAfter: Duration = .milliseconds(100),
        password: String? = nil, namespace: String = "courier-test", identityKey: [UInt8] = RedisTestServer.identityKey
    ) throws -> RedisFleet {
        var configuration = RedisFleet.Configuration(
            port: port, identityKey: identityKey, password: password ?? self.password)
        configuration.commandTimeout = commandTimeout
        configuration.connectTimeout = commandTimeout
        configuration.retryAfter = retryAfter
        configuration.namespace = namespace
        configuration.fillLease = .seconds(5)
        return try RedisFleet(configuration: configuration)
    }

    /// Runs one command on a connection of its own.
    func command(_ words: String...) throws -> RedisReply {
        try RedisConnection(endpoint: endpoint()).run(words.map { Data($0.utf8) })
    }

    /// The bytes the server has sent to its clients since it started (`total_net_output_bytes`).
    func bytesSent() throws -> Int {
        let name = "total_net_output_bytes:"
        guard case .string(let info) = try command("INFO", "stats"),
            let line = String(decoding: info, as: UTF8.self).split(whereSeparator: \.isNewline)
                .first(where: { $0.hasPrefix(name) }),
            let bytes = Int(line.dropFirst(name.count))
        else { throw CocoaError(.fileReadCorruptFile) }
        return bytes
    }

    /// Every key and (string or hash) value in the server, for checks that a secret is absent.
    func dump() throws -> Data {
        let connection = RedisConnection(endpoint: endpoint())
        var out = Data()
        guard case .array(let keys) = try connection.run([Data("KEYS".utf8), Data("*".utf8)]) else { return out }
        for key in keys {
            guard let name = key.data else { continue }
            out.append(name)
            for verb in ["GET", "HGETALL", "ZRANGE"] {
                let arguments =
                    verb == "ZRANGE"
                    ? [Data(verb.utf8), name, Data("0".utf8), Data("-1".utf8)] : [Data(verb.utf8), name]
                switch try connection.run(arguments) {
                case .string(let value): out.append(value)
                case .array(let items): for item in items { if let value = item.data { out.append(value) } }
                default: break
                }
            }
        }
        return out
    }

    private static var executable: String {
        for path in ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        return "/usr/bin/redis-server"
    }

    /// A port the kernel just handed out (bound, then closed).
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileWriteUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

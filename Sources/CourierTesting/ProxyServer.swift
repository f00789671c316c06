import Foundation
import Glibc

/// A real proxy from the system on a free loopback port, started for a test with a config in a
/// temporary folder: tinyproxy (HTTP, and HTTPS through CONNECT, optionally with Basic
/// credentials) or dante's `danted` (SOCKS5, optionally with a username and password).
///
/// ```swift
/// let proxy = try ProxyServer.tinyproxy(username: "alice", password: "secret")
/// defer { proxy.stop() }
/// // configure the client with .url(proxy.url, username: "alice", password: "secret")
/// #expect(proxy.waitForLog(containing: "GET http://127.0.0.1"))
/// ```
public final class ProxyServer: Sendable {
    /// Why a proxy could not be started.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What went wrong, with the proxy's own message when there is one.
        public let description: String
    }

    /// The port the proxy listens on (127.0.0.1 only).
    public let port: UInt16
    /// `http://127.0.0.1:PORT` for tinyproxy, `socks5h://127.0.0.1:PORT` for dante.
    public let url: URL
    /// The user the proxy accepts, when it asks for credentials.
    public let username: String?
    /// The password of `username`.
    public let password: String?
    /// The temporary folder holding the config, pid file and log.
    public let directory: URL
    private let pid: pid_t
    /// The system user made for dante's username method (deleted by `stop()`).
    private let systemUser: String?
    private let stopped = Locked(false)

    /// Whether tinyproxy is installed.
    public static var hasTinyproxy: Bool { ChildProcess.find("tinyproxy") != nil }
    /// Whether dante's server is installed.
    public static var hasDante: Bool { ChildProcess.find("danted") != nil }

    /// Starts tinyproxy; with a username and password it answers 407 without them.
    /// - Throws: ``Failure`` when tinyproxy is missing or does not come up.
    public static func tinyproxy(username: String? = nil, password: String? = nil) throws -> ProxyServer {
        guard let binary = ChildProcess.find("tinyproxy") else {
            throw Failure(description: "tinyproxy is not installed (apt-get install tinyproxy)")
        }
        return try start(scheme: "http", username: username, password: password, systemUser: nil) { dir, port in
            let user = getuid() == 0 ? "User root\nGroup root\n" : ""
            let auth = username.map { "BasicAuth \($0) \(password ?? "")\n" } ?? ""
            let config = """
                Port \(port)
                Listen 127.0.0.1
                Timeout 30
                LogFile "\(dir.path)/proxy.log"
                LogLevel Info
                PidFile "\(dir.path)/proxy.pid"
                MaxClients 64
                Allow 127.0.0.1
                \(user)\(auth)
                """
            let path = dir.appendingPathComponent("tinyproxy.conf")
            try config.write(to: path, atomically: true, encoding: .utf8)
            return (binary, ["-d", "-c", path.path])
        }
    }

    /// Starts dante's SOCKS5 server. With `authenticated`, it takes the username method
    /// (RFC 1929), which dante checks against the system's users: a user with a random password
    /// is added for it (`useradd`, so root only) and deleted by ``stop()``.
    /// - Throws: ``Failure`` when dante is missing, the user cannot be made, or dante does not
    ///   come up.
    public static func dante(authenticated: Bool) throws -> ProxyServer {
        guard let binary = ChildProcess.find("danted") else {
            throw Failure(description: "dante-server is not installed (apt-get install dante-server)")
        }
        var user: (name: String, password: String)?
        if authenticated {
            guard getuid() == 0 else {
                throw Failure(description: "dante's username method checks system users: adding one needs root")
            }
            user = try addSystemUser()
        }
        do {
            return try start(
                scheme: "socks5h", username: user?.name, password: user?.password, systemUser: user?.name
            ) { dir, port in
                let method = authenticated ? "username" : "none"
                // As root, dante checks passwords as root and serves clients as nobody.
                let users = getuid() == 0 ? "user.privileged: root\nuser.unprivileged: nobody\n" : ""
                let config = """
                    logoutput: \(dir.path)/proxy.log
                    internal: 127.0.0.1 port = \(port)
                    external: 127.0.0.1
                    socksmethod: \(method)
                    clientmethod: none
                    \(users)client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }
                    socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 log: connect error }

                    """
                let path = dir.appendingPathComponent("danted.conf")
                try config.write(to: path, atomically: true, encoding: .utf8)
                return (binary, ["-f", path.path, "-p", dir.path + "/proxy.pid", "-N", "1"])
            }
        } catch {
            if let user { deleteSystemUser(user.name) }
            throw error
        }
    }

    deinit {
        stop()
    }

    /// The proxy's log so far.
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("proxy.log"), encoding: .utf8)) ?? ""
    }

    /// Waits until the log contains `text` (the proxy writes a line per request it serves).
    /// - Returns: false when `timeout` passed first.
    public func waitForLog(containing text: String, timeout: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        repeat {
            if log.contains(text) { return true }
            usleep(5_000)
        } while ContinuousClock.now < deadline
        return log.contains(text)
    }

    /// Stops the proxy (SIGTERM, then SIGKILL after five seconds), removes its folder and the
    /// system user made for it. Idempotent.
    public func stop() {
        let first = stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        ChildProcess.terminate(pid)
        if let systemUser { Self.deleteSystemUser(systemUser) }
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: - Private

    private init(
        port: UInt16, scheme: String, username: String?, password: String?, directory: URL, pid: pid_t,
        systemUser: String?
    ) {
        self.port = port
        url = URL(string: "\(scheme)://127.0.0.1:\(port)")!
        self.username = username
        self.password = password
        self.directory = directory
        self.pid = pid
        self.systemUser = systemUser
    }

    private static func start(
        scheme: String, username: String?, password: String?, systemUser: String?,
        command: (URL, UInt16) throws -> (String, [String])
    ) throws -> ProxyServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            var lastLog = ""
            // The free port is found by binding port 0 and closing; another process can take it
            // first, so a failed start is retried on a new port.
            for _ in 0..<5 {
                let listener = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 1)
                close(listener.fd)
                let (binary, arguments) = try command(directory, listener.port)
                let pid = try ChildProcess.spawn(binary, arguments).pid
                if ChildProcess.waitUntilAccepting(port: listener.port, pid: pid, timeout: .seconds(10)) {
                    return ProxyServer(
                        port: listener.port, scheme: scheme, username: username, password: password,
                        directory: directory, pid: pid, systemUser: systemUser)
                }
                ChildProcess.terminate(pid)
                lastLog =
                    (try? String(contentsOf: directory.appendingPathComponent("proxy.log"), encoding: .utf8)) ?? ""
            }
            throw Failure(description: "\(scheme) proxy did not start: \(lastLog)")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Adds a system user without a home or a login shell, with a random password.
    private static func addSystemUser() throws -> (name: String, password: String) {
        let name = "courier-socks-\(getpid())"
        let password = UUID().uuidString.replacingOccurrences(of: "-", with: "")
        guard let useradd = ChildProcess.find("useradd"), let chpasswd = ChildProcess.find("chpasswd") else {
            throw Failure(description: "useradd/chpasswd not found")
        }
        deleteSystemUser(name)  // left over by a crashed run
        let added = try ChildProcess.run(
            useradd, ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
        guard added.status == 0 else { throw Failure(description: "useradd \(name) failed (\(added.status))") }
        // chpasswd reads `name:password` on its standard input, which `spawn` does not feed:
        // a file given as stdin through a shell is the simplest.
        let input = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-chpasswd-\(UUID().uuidString)")
        try "\(name):\(password)\n".write(to: input, atomically: true, encoding: .utf8)
        chmod(input.path, 0o600)
        defer { try? FileManager.default.removeItem(at: input) }
        let set = try ChildProcess.run("/bin/sh", ["-c", "\(chpasswd) < \"$0\"", input.path])
        guard set.status == 0 else {
            deleteSystemUser(name)
            throw Failure(description: "chpasswd for \(name) failed (\(set.status))")
        }
        return (name, password)
    }

    private static func deleteSystemUser(_ name: String) {
        guard let userdel = ChildProcess.find("userdel") else { return }
        _ = try? ChildProcess.run(userdel, [name])
    }

}

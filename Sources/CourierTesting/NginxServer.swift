import Foundation
import Glibc

/// nginx from the system, started for a test with a config in a temporary folder, optionally
/// with TLS (a self-signed CA and a certificate for `127.0.0.1`/`localhost`) and HTTP/2.
///
/// ```swift
/// let nginx = try NginxServer.start(tls: true, http2: true, root: fixtures)
/// defer { nginx.stop() }
/// // configure the client with nginx.caBundlePath and use nginx.baseURL
/// ```
public final class NginxServer: Sendable {
    /// Why nginx could not be started.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What went wrong, with nginx's or openssl's own message when there is one.
        public let description: String
    }

    /// The port nginx listens on (127.0.0.1 only).
    public let port: UInt16
    /// `https://127.0.0.1:PORT` (or `http://` without TLS).
    public let baseURL: URL
    /// The PEM file of the CA that signed the server certificate; `nil` without TLS.
    public let caBundlePath: String?
    /// The temporary folder holding the config, certificates, pid file and error log.
    public let directory: URL
    /// The process id of nginx's master process.
    public let pid: Int32

    private let stopped = Locked(false)

    /// Whether an nginx binary is available.
    public static var isInstalled: Bool { ChildProcess.find("nginx") != nil }

    /// Writes a config, makes certificates when `tls` is set, starts nginx on a free port and
    /// waits until it accepts connections.
    /// - Parameters:
    ///   - tls: Serve HTTPS with a certificate signed by a fresh CA (see ``caBundlePath``).
    ///   - http2: Offer HTTP/2 (negotiated through ALPN with TLS; prior knowledge only without).
    ///   - root: The folder whose files are served.
    ///   - extraConfig: Directives added inside the `server` block, e.g. extra `location`s.
    ///     `access_log access.log courier;` logs each request to ``accessLogURL`` as
    ///     `connection requests-on-it tls-session-reused method uri status` (the connection is
    ///     nginx's serial number; the session `r` when resumed, `.` when not).
    /// - Returns: the running server; call ``stop()`` when done.
    /// - Throws: ``Failure`` when nginx or openssl is missing or nginx does not come up.
    public static func start(tls: Bool = true, http2: Bool = true, root: URL, extraConfig: String = "") throws
        -> NginxServer
    {
        guard let nginx = ChildProcess.find("nginx") else {
            throw Failure(description: "nginx is not installed (apt-get install nginx); NginxServer needs it")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            let certificates = tls ? try TestCertificates.make(in: directory) : nil
            var lastError = ""
            // The free port is found by binding port 0 and closing; another process can take it
            // before nginx binds, so a failed start is retried on a new port.
            for _ in 0..<5 {
                let port = try freePort()
                let config = configuration(
                    directory: directory, port: port, tls: certificates, http2: http2, root: root,
                    extraConfig: extraConfig)
                let configURL = directory.appendingPathComponent("nginx.conf")
                try config.write(to: configURL, atomically: true, encoding: .utf8)
                let pid = try ChildProcess.spawn(
                    nginx, ["-c", configURL.path, "-p", directory.path, "-e", directory.path + "/error.log"]
                ).pid
                if ChildProcess.waitUntilAccepting(port: port, pid: pid, timeout: .seconds(10)) {
                    return NginxServer(
                        port: port, tls: certificates != nil, caBundlePath: certificates?.caPath, directory: directory,
                        pid: pid)
                }
                ChildProcess.terminate(pid)
                lastError =
                    (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
            }
            throw Failure(description: "nginx did not start: \(lastError)")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private init(port: UInt16, tls: Bool, caBundlePath: String?, directory: URL, pid: pid_t) {
        self.port = port
        self.baseURL = URL(string: "\(tls ? "https" : "http")://127.0.0.1:\(port)")!
        self.caBundlePath = caBundlePath
        self.directory = directory
        self.pid = pid
    }

    deinit {
        stop()
    }

    /// A CA directory (hashed names, like `/etc/ssl/certs`) that trusts this server's CA, inside
    /// the server's folder: a stand-in for a system store in TLS trust tests.
    /// - Throws: ``Failure`` for a plain-http server or when openssl fails.
    public func makeHashedCADirectory() throws -> URL {
        guard let caBundlePath else { throw Failure(description: "a plain-http server has no CA") }
        return try TestCertificates.hashedDirectory(
            for: caBundlePath, in: directory.appendingPathComponent("capath-\(UUID().uuidString)"))
    }

    /// The URL of `path` on this server.
    public func url(_ path: String) -> URL {
        URL(string: baseURL.absoluteString + (path.hasPrefix("/") ? path : "/" + path))!
    }

    /// Stops nginx (SIGTERM, then SIGKILL after five seconds), waits for it and removes the
    /// temporary folder. Idempotent.
    public func stop() {
        let first = stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        ChildProcess.terminate(pid)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Where `access_log access.log courier;` in `extraConfig` writes (a path relative to
    /// nginx's prefix, the server's folder).
    public var accessLogURL: URL { directory.appendingPathComponent("access.log") }

    /// The text of nginx's error log (useful when a test fails).
    public var errorLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    // MARK: - Private

    private static func freePort() throws -> UInt16 {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 1)
        close(listener.fd)
        return listener.port
    }

    private static func configuration(
        directory: URL, port: UInt16, tls: TestCertificates?, http2: Bool, root: URL, extraConfig: String
    ) -> String {
        let dir = directory.path
        var listen = "listen 127.0.0.1:\(port)"
        if tls != nil { listen += " ssl" }
        if http2 { listen += " http2" }
        let user = getuid() == 0 ? "user root;\n" : ""
        let ssl =
            tls.map {
                """
                        ssl_certificate \($0.certificatePath);
                        ssl_certificate_key \($0.keyPath);
                        ssl_protocols TLSv1.2 TLSv1.3;
                        ssl_session_cache shared:SSL:1m;

                """
            } ?? ""
        return """
            \(user)daemon off;
            master_process on;
            worker_processes 1;
            pid \(dir)/nginx.pid;
            error_log \(dir)/error.log warn;
            events { worker_connections 4096; }
            http {
                access_log off;
                log_format courier '$connection $connection_requests $ssl_session_reused $request_method $request_uri $status';
                client_body_temp_path \(dir)/client_body;
                proxy_temp_path \(dir)/proxy;
                fastcgi_temp_path \(dir)/fastcgi;
                uwsgi_temp_path \(dir)/uwsgi;
                scgi_temp_path \(dir)/scgi;
                keepalive_requests 100000;
                keepalive_timeout 120s;
                http2_max_requests 100000;
                types {
                    text/html html;
                    text/plain txt;
                    application/json json;
                    application/x-protobuf pb;
                    application/octet-stream bin;
                }
                default_type application/octet-stream;
                server {
                    \(listen);
                    server_name localhost 127.0.0.1;
            \(ssl)            root \(root.path);
                    location / { }
                    \(extraConfig)
                }
            }

            """
    }
}

import Foundation

/// An in-process HTTP/1.1 server on a loopback port, for tests — what OkHttp's MockWebServer
/// gives Android teams.
///
/// It binds and starts accepting in `init`; each connection gets its own thread and keep-alive,
/// pipelining, chunked request bodies and `Expect: 100-continue` work as in HTTP/1.1. Every
/// request is recorded. A request is answered by, in order: the next ``enqueue(_:)``d response,
/// a custom ``route(_:_:)``, or a built-in route; unknown paths get 404.
///
/// Built-in routes (JSON bodies unless said otherwise):
/// - `/echo`, `/get`, `/anything/…`: `{"method","path","query","args","headers","body","bodyBase64","connectionID"}`;
///   header names lowercased, repeated ones joined by `", "`.
/// - `/status/{code}` (no body for 204/304; 401 adds `WWW-Authenticate: Bearer`); `/delay/{ms}` (echo, late).
/// - `/redirect/{n}` (302 chain to `/get`), `/redirect-to?url=U&status=S`, `/redirect-loop`.
/// - `/stream/{n}[?intervalMs=M]`: n JSON lines, chunked, one chunk each; `/bytes/{n}`: ``bytePattern(count:)``.
/// - `/gzip`, `/deflate` (encoded only when `Accept-Encoding` allows); `/gzip-bomb?size=N` (N zero bytes, gzipped).
/// - `/drop-mid-body`: `Content-Length: 100000`, 50,000 bytes, then close.
/// - `/bearer`: 200 `{"authenticated":true,"token"}` or 401 with `WWW-Authenticate`; see ``validBearerTokens``.
/// - `/cache/etag?etag=X&max-age=N`, `/cache/last-modified?date=D&max-age=N` (304 on a matching condition),
///   `/response-headers?Name=value&…` (each item becomes a response header).
/// - `/upload`: reads any size without storing, answers `{"bytes","crc32","method","contentType"}`.
/// - `/fault/{name}`: `reset-headers`, `reset-body`, `close-body`, `no-response`, `stall-after-headers`,
///   `trickle?bytes=N&intervalMs=M&total=T`, `truncated-chunked`, `bad-status-line`, `bad-header-bytes`,
///   `content-length-larger`, `content-length-smaller`, `huge-headers?size=N`, `endless` (see ``Fault``).
///
/// For another origin (cross-origin redirects, credential stripping) start a second server;
/// `TestServer(host: "127.0.0.2")` also differs by host. The `waitFor…` methods come in a
/// blocking form (for threads) and an `async` form (for async tests: it does not hold a thread
/// of the cooperative pool); do not call them from a route handler.
///
/// ```swift
/// let server = try TestServer()
/// defer { server.stop() }
/// server.enqueue(.json(["id": 1]))
/// // … point the client at server.baseURL …
/// #expect(server.recordedRequests.first?.path == "/users/1")
/// ```
public final class TestServer: Sendable {
    let core: ServerCore

    /// Binds `host:port` (0: an ephemeral port), listens and starts accepting.
    /// - Parameters:
    ///   - host: An IPv4 address to bind.
    ///   - port: The port; 0 picks a free one.
    /// - Throws: `SocketError` when the socket cannot be bound.
    public init(host: String = "127.0.0.1", port: UInt16 = 0) throws {
        core = try ServerCore(host: host, port: port)
        core.start(name: "TestServer accept \(core.port)")
    }

    deinit {
        core.stop()
    }

    /// The bound port.
    public var port: UInt16 { core.port }

    /// `http://HOST:PORT`, without a trailing slash.
    public var baseURL: URL { URL(string: "http://\(core.host):\(core.port)")! }

    /// The URL of `path` (which may include a query) on this server.
    public func url(_ path: String) -> URL {
        URL(string: "http://\(core.host):\(core.port)" + (path.hasPrefix("/") ? path : "/" + path))!
    }

    /// Stops accepting, closes every connection and waits for the server's threads.
    ///
    /// Idempotent; also called by `deinit`. Waits at most about ten seconds. The recorded
    /// requests stay; routes and queued responses are released (a route that captures the
    /// server's owner would otherwise keep both alive for good).
    public func stop() {
        core.stop()
    }

    /// How many TCP connections were accepted so far (tests assert connection reuse with it).
    public var acceptedConnections: Int { core.state.withLock { $0.acceptedConnections } }

    /// How many connections are open right now.
    public var openConnections: Int { core.state.withLock { $0.connections.count } }

    /// Blocks until at most `limit` connections are open (e.g. 0 after a client closed its
    /// connection), or `timeout` passes. Wakes when a connection ends; no polling.
    /// - Parameters:
    ///   - limit: The number of connections that may stay open.
    ///   - timeout: How long to wait at most.
    /// - Returns: whether the condition was met in time.
    @discardableResult
    public func waitForOpenConnections(atMost limit: Int, timeout: Duration = TestServer.defaultWaitTimeout) -> Bool {
        core.waitUntil(timeout: timeout) { $0.connections.count <= limit }
    }

    /// Blocks until at least `count` requests were received (counted as ``requestCount``), or
    /// `timeout` passes — e.g. to know a slow request has reached the server before a test acts.
    /// Wakes when a request arrives; no polling.
    /// - Parameters:
    ///   - count: The number of requests to wait for.
    ///   - timeout: How long to wait at most.
    /// - Returns: whether that many requests arrived in time.
    @discardableResult
    public func waitForRequests(atLeast count: Int, timeout: Duration = TestServer.defaultWaitTimeout) -> Bool {
        core.waitUntil(timeout: timeout) { $0.requestCount >= count }
    }

    /// How many requests were received so far.
    public var requestCount: Int { core.state.withLock { $0.requestCount } }

    /// Every request received so far, in arrival order.
    public var recordedRequests: [RecordedRequest] { core.state.withLock { $0.records } }

    /// The recorded requests whose path is `path`.
    public func recordedRequests(path: String) -> [RecordedRequest] {
        core.state.withLock { $0.records.filter { $0.path == path } }
    }

    /// Forgets the recorded requests and zeroes ``requestCount`` and ``acceptedConnections``
    /// (connections already open stay open and keep their ids).
    public func resetRecords() {
        core.state.withLock {
            $0.records.removeAll()
            $0.requestCount = 0
            $0.acceptedConnections = 0
        }
    }

    /// Queues a response for the next request, whatever its path (before routes are consulted).
    ///
    /// Queued responses are used first in, first out.
    public func enqueue(_ response: ScriptedResponse) {
        core.state.withLock { $0.queue.append(response) }
    }

    /// How many queued responses are still waiting for a request.
    public var pendingScriptedResponses: Int { core.state.withLock { $0.queue.count } }

    /// Adds a route for one method and an exact path (no query), overriding built-ins and
    /// earlier routes.
    /// - Parameters:
    ///   - method: The method to match, e.g. `"POST"`; `nil` matches any.
    ///   - path: The exact path, e.g. `/users/1`.
    ///   - handler: Makes the response; called on the connection's thread.
    public func route(
        _ method: String?, _ path: String,
        _ handler: @escaping @Sendable (RecordedRequest) -> ScriptedResponse
    ) {
        core.state.withLock { $0.routes.append(.init(method: method, path: path, handler: handler)) }
    }

    /// Adds a route for any method on an exact path (no query), overriding built-ins and
    /// earlier routes.
    /// - Parameters:
    ///   - path: The exact path, e.g. `/users/1`.
    ///   - handler: Makes the response; called on the connection's thread.
    public func route(_ path: String, _ handler: @escaping @Sendable (RecordedRequest) -> ScriptedResponse) {
        route(nil, path, handler)
    }

    /// The bearer tokens `/bearer` accepts; `nil` (the default) accepts any non-empty token.
    ///
    /// Auth-refresh tests change it to make a token expire.
    public var validBearerTokens: Set<String>? {
        get { core.state.withLock { $0.validBearerTokens } }
        set { core.state.withLock { $0.validBearerTokens = newValue } }
    }

    /// Whether responses without a `Date` header get one with the current time (default `true`).
    ///
    /// Cache tests that run on an injected clock can turn it off, or set `Date` themselves
    /// (e.g. through `/response-headers?Date=…`).
    public var sendsDateHeader: Bool {
        get { core.state.withLock { $0.sendsDateHeader } }
        set { core.state.withLock { $0.sendsDateHeader = newValue } }
    }

    /// The deterministic bytes `/bytes/{n}` sends: byte `i` is `i % 251`.
    public static func bytePattern(count: Int) -> Data {
        var data = Data(capacity: count)
        let block = patternBlock
        var remaining = count
        while remaining > 0 {
            let take = min(remaining, block.count)
            data.append(contentsOf: block[0..<take])
            remaining -= take
        }
        return data
    }

    /// 256 periods of the pattern, built once; every piece of `/bytes/{n}` is cut from it.
    ///
    /// An array rather than `Data`: LeakSanitizer does not recognise the pointer inside a global
    /// `Data`'s packed representation and would report the block as leaked.
    static let patternBlock: [UInt8] = (0..<(251 * 256)).map { UInt8($0 % 251) }
}

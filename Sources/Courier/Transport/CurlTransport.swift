import CCurlShim
import Foundation
import Synchronization

/// The libcurl transport: one multi handle driven by one dedicated thread.
///
/// Connections (and HTTP/2 sessions, TLS sessions, DNS entries) are shared by every request
/// sent through the same transport, so keep one per process or per client, not per call.
package final class CurlTransport: Transport {
    /// Settings that hold for every request sent through one transport.
    package struct Configuration: Sendable {
        /// At most this many connections to one host (requests beyond it wait for one).
        package var maxConnectionsPerHost: Int
        /// At most this many connections in all; also how many idle ones are kept open.
        package var maxConnections: Int
        /// How long a connection may take to set up, unless a request says otherwise.
        package var connectTimeout: Duration
        /// A PEM file of CA certificates to trust instead of the system's (e.g. a test CA).
        /// It replaces the whole system store, the system's CA directory included.
        /// TLS verification itself cannot be turned off.
        package var caBundlePath: String?
        /// Stands in for libcurl's compiled-in CA file and directory (tests only; nil: libcurl's).
        package var systemTrustStore: SystemTrustStore?
        /// Host names answered without DNS (`host:port` → address), like `curl --resolve`.
        package var resolve: [ResolveOverride]
        /// Which proxy requests go through (default `.none`: none, whatever the environment says).
        package var proxy: HTTPClient.Configuration.Proxy
        /// Ignored: libcurl's cookie engine is never turned on. It keeps cookies on the transfer
        /// handles, which the transport pools for every client and user it serves, so cookies
        /// would cross from one to the other. Cookies live in a `CookieJar` of one client
        /// (`HTTPClient.Configuration.cookieJar`) or one service instead.
        package var enablesCookieEngine: Bool

        package init(
            maxConnectionsPerHost: Int = 8, maxConnections: Int = 64, connectTimeout: Duration = .seconds(10),
            caBundlePath: String? = nil, resolve: [ResolveOverride] = [], proxy: HTTPClient.Configuration.Proxy = .none,
            enablesCookieEngine: Bool = false
        ) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxConnections = maxConnections
            self.connectTimeout = connectTimeout
            self.caBundlePath = caBundlePath
            self.resolve = resolve
            self.proxy = proxy
            self.enablesCookieEngine = enablesCookieEngine
        }

        /// Checks the values that would make every request fail.
        /// - Throws: `CourierError.configuration`.
        package func validate() throws(CourierError) {
            guard maxConnectionsPerHost >= 1, maxConnections >= 1 else {
                throw CourierError(.configuration, "connection limits must be at least 1")
            }
            guard connectTimeout > .zero else {
                throw CourierError(.configuration, "the connect timeout must be positive")
            }
            if let caBundlePath {
                try Self.validateBundle(at: caBundlePath)
            }
            for entry in resolve {
                let forbidden: (Character) -> Bool = { $0.isNewline || $0 == "\0" || $0 == "," }
                guard !entry.host.isEmpty, !entry.address.isEmpty, (1...65535).contains(entry.port),
                    !entry.host.contains(where: { forbidden($0) || $0 == ":" }),
                    !entry.address.contains(where: forbidden)
                else {
                    throw CourierError(.configuration, "invalid resolve override for \(entry.host)")
                }
            }
            try proxy.validate()
        }

        /// A CA bundle that can work: a readable file with at least one PEM certificate. An empty
        /// file, a folder or another format made every https call fail with `.tls`, as if the
        /// server were at fault.
        private static func validateBundle(at path: String) throws(CourierError) {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue,
                let contents = FileManager.default.contents(atPath: path)
            else {
                throw CourierError(.configuration, "cannot read the CA bundle at \(path)")
            }
            // `-----BEGIN CERTIFICATE-----` or `-----BEGIN TRUSTED CERTIFICATE-----`, as OpenSSL reads them.
            guard contents.range(of: Data("CERTIFICATE-----".utf8)) != nil else {
                throw CourierError(.configuration, "the CA bundle at \(path) holds no PEM certificate")
            }
        }
    }

    /// A CA file and a CA directory (hashed names, as `openssl rehash` makes them) that play
    /// the system store's part in tests.
    package struct SystemTrustStore: Sendable, Equatable {
        package var file: String?
        package var directory: String?

        package init(file: String?, directory: String?) {
            self.file = file
            self.directory = directory
        }
    }

    /// One `host:port` answered with a fixed address (`CURLOPT_RESOLVE`).
    package typealias ResolveOverride = HTTPClient.ResolveOverride

    /// The configuration the transport was made with.
    package let configuration: Configuration
    private let loop: CurlLoop

    /// The transport's large-body buffers between uses.
    var bodyBuffers: BodyBufferPool { loop.bodyBuffers }

    package var load: TransportLoad? {
        TransportLoad(
            connections: courier_transport_load_sockets(loop.load), queued: courier_transport_load_queued(loop.load))
    }

    /// Starts the transport's thread.
    /// - Throws: `CourierError.configuration` when the configuration cannot work or libcurl
    ///   cannot be initialised.
    package init(configuration: Configuration = .init()) throws(CourierError) {
        try configuration.validate()
        self.configuration = configuration
        loop = try CurlLoop(configuration: configuration)
    }

    deinit {
        loop.enqueue(.shutdown)
    }

    package func execute(_ request: TransportRequest) async throws -> TransportResponse {
        let transfer = try CurlTransfer(request: request, delivery: .buffered)
        try await run(transfer)
        return transfer.takeResponse()
    }

    /// The hop is the curl transfer itself: the client's frame holds one reference to it.
    package func makeHop(_ request: TransportRequest) throws -> any TransportHop {
        try CurlTransfer(request: request, delivery: .buffered)
    }

    package func send(_ hop: any TransportHop) async throws {
        guard let transfer = hop as? CurlTransfer else {
            throw CourierError(.invalidRequest, "the hop was made by another transport")
        }
        try await run(transfer)
    }

    package func stream(_ request: TransportRequest) async throws -> TransportStreamResponse {
        let loop = self.loop
        let reference = TransferReference()
        let buffer = StreamBuffer(blocks: loop.bodyBuffers) { control in
            guard let transfer = reference.transfer else { return }
            switch control {
            case .resume: loop.enqueue(.resume(transfer))
            case .cancel: loop.requestCancel(transfer)
            }
        }
        let transfer = try CurlTransfer(request: request, delivery: .streaming(buffer))
        reference.transfer = transfer
        try await run(transfer)
        let head = transfer.takeResponse().head
        return TransportStreamResponse(head: head, body: ResponseBodyStream(buffer: buffer, keepAlive: self))
    }

    /// Runs a transfer on the loop; once it returns, the response waits in
    /// `transfer.takeResponse()`. Inlined into `execute`, `send` and `stream` so that a request
    /// in flight holds one async frame here, not two.
    /// - Throws: the transfer's error, or `CancellationError` when the task is cancelled.
    @inline(__always)
    private func run(_ transfer: CurlTransfer) async throws {
        let loop = self.loop
        // A service call's scope cancels the transfer without cancelling the awaiting task.
        if let scope = transfer.options.cancellationScope, !scope.install(transfer, on: loop) {
            _ = transfer.cancel()  // cancelled already: `install` below resumes at once
        }
        defer { transfer.options.cancellationScope?.removeHandler() }
        try await withTaskCancellationHandler {
            defer { ThreadSanitizer.continuationReturned() }
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                if transfer.install(continuation) { loop.enqueue(.add(transfer)) }
            }
        } onCancel: {
            loop.requestCancel(transfer)
        }
    }
}

/// A buffered transfer is the hop `HTTPClient` sends: `takeResponse()` is the transfer's.
extension CurlTransfer: TransportHop {}

/// A weak link from a body stream back to its transfer, so the two do not keep each other alive.
private final class TransferReference: Sendable {
    private struct Weak { weak var transfer: CurlTransfer? }
    private let storage = LockedValue(Weak())

    var transfer: CurlTransfer? {
        get { storage.withLock { $0.transfer } }
        set { storage.withLock { $0.transfer = newValue } }
    }
}

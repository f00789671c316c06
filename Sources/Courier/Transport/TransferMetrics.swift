import Foundation

/// Timings and sizes of one transfer (one hop; redirects are separate transfers).
///
/// The phase durations are cumulative from the start of the transfer, as libcurl reports
/// them: `connect` includes `nameLookup`, `timeToFirstByte` includes both, and so on.
public struct TransferMetrics: Sendable, Hashable {
    /// The HTTP version the exchange used.
    public enum HTTPVersion: String, Sendable, Hashable {
        /// HTTP/1.0.
        case http1_0 = "HTTP/1.0"
        /// HTTP/1.1.
        case http1_1 = "HTTP/1.1"
        /// HTTP/2.
        case http2 = "HTTP/2"
        /// HTTP/3 (QUIC).
        case http3 = "HTTP/3"
        /// Not reported: no transfer happened, or libcurl named another version.
        case unknown
    }

    /// Time until the host name was resolved.
    public var nameLookup: Duration
    /// Time until the TCP connection was made.
    public var connect: Duration
    /// Time until the TLS handshake finished (zero for plain HTTP or a reused connection).
    public var tlsHandshake: Duration
    /// Time until the first response byte arrived.
    public var timeToFirstByte: Duration
    /// Time until the transfer ended.
    public var total: Duration
    /// Bytes sent: request head and body.
    public var bytesSent: Int64
    /// Bytes received: response head and body as they came over the wire (before decoding).
    public var bytesReceived: Int64
    /// The protocol version used.
    public var httpVersion: HTTPVersion
    /// True when the request went over a connection kept from an earlier request.
    public var reusedConnection: Bool

    init(
        nameLookup: Duration = .zero, connect: Duration = .zero, tlsHandshake: Duration = .zero,
        timeToFirstByte: Duration = .zero, total: Duration = .zero, bytesSent: Int64 = 0,
        bytesReceived: Int64 = 0, httpVersion: HTTPVersion = .unknown, reusedConnection: Bool = false
    ) {
        self.nameLookup = nameLookup
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.timeToFirstByte = timeToFirstByte
        self.total = total
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.httpVersion = httpVersion
        self.reusedConnection = reusedConnection
    }
}

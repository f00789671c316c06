import Foundation
import HTTPTypes

/// A request as the test server received it.
public struct RecordedRequest: Sendable {
    /// The method, e.g. `GET`.
    public let method: String
    /// The request target as sent, e.g. `/echo?a=1&b=2`.
    public let target: String
    /// The protocol version, e.g. `HTTP/1.1`.
    public let version: String
    /// The header fields in the order received, names as sent.
    public let headerList: [(name: String, value: String)]
    /// The body. Empty for `/upload`, which only counts and checksums what it reads.
    public let body: Data
    /// How many body bytes were read (also for `/upload`).
    public let bodyByteCount: Int
    /// The CRC-32 (zlib's) of the body bytes, also for `/upload`.
    public let bodyCRC32: UInt32
    /// Which accepted connection carried the request (1-based, in accept order).
    public let connectionID: Int
    /// The position of this request on its connection (1-based).
    public let indexOnConnection: Int

    /// The target up to `?`.
    public var path: String {
        target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
    }

    /// The raw (still percent-encoded) query after `?`, or `nil` when there is none.
    public var query: String? {
        target.firstIndex(of: "?").map { String(target[target.index(after: $0)...]) }
    }

    /// The query as decoded name/value pairs in order (`+` is read as a space).
    public var queryItems: [(name: String, value: String)] {
        guard let query else { return [] }
        return query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (s: Substring) in
                String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s)
            }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    /// The first value of a query parameter.
    public func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    /// The header fields as `HTTPFields` (fields with names HTTPTypes rejects are left out).
    public var headers: HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headerList {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        return fields
    }

    /// The values of a header, compared case-insensitively, joined by `", "`; `nil` when absent.
    public func header(_ name: String) -> String? {
        let values = headerList.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// The body decoded as UTF-8 (invalid bytes replaced).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    init(
        head: RequestHead, body: Data, bodyByteCount: Int, bodyCRC32: UInt32, connectionID: Int,
        indexOnConnection: Int
    ) {
        self.method = head.method
        self.target = head.target
        self.version = head.version
        self.headerList = head.headers
        self.body = body
        self.bodyByteCount = bodyByteCount
        self.bodyCRC32 = bodyCRC32
        self.connectionID = connectionID
        self.indexOnConnection = indexOnConnection
    }
}

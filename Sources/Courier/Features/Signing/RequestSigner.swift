import Crypto
import Foundation
import HTTPTypes

/// Signs each attempt of a service's calls with HMAC-SHA256.
///
/// Set it in `ServiceConfiguration.signer`. It runs per attempt, after every adapter (the
/// credential included), on the request exactly as it is sent, so a retry and a
/// refresh-then-retry carry a fresh timestamp, nonce and signature. It adds four header fields:
/// `X-Key-Id`, `X-Timestamp` (Unix seconds), `X-Nonce` (32 hex digits, random) and
/// `X-Signature`, the lowercase hex HMAC-SHA256 under the key's secret of the canonical text:
///
/// ```text
/// METHOD \n PATH \n SORTED-QUERY \n SHA256-HEX(BODY) \n TIMESTAMP \n NONCE
/// ```
///
/// PATH is the path as sent (percent-encoded, without the query); SORTED-QUERY the query's
/// `name=value` items as sent, sorted by name then value (byte order) and joined by `&` (empty
/// without a query); the body digest is of the bytes sent (of an empty body without one).
/// `Fixtures/signing/vectors.json`, made by `scripts/make-signing-vectors.py` with Python's
/// `hmac`, pins the format.
///
/// Per endpoint: `rules` maps an endpoint path prefix, as the service writes it (`"public/"`),
/// to `.unsigned` or to another key; a prefix covers whole path segments (`"public"` covers
/// `public/info`, not `publications`), the longest matching prefix wins, others use `key`. A
/// rule and an endpoint are compared as the request sends the path (`"a b"` and `"a%20b"`
/// are one path).
public struct RequestSigner: Sendable {
    /// A signing key: its public id and its secret.
    public struct Key: Sendable {
        /// Sent in `X-Key-Id`, so the server knows which secret to check with.
        let id: String
        /// The bytes (`SymmetricKey` is not `Sendable`; one is made per signature).
        let secret: Data
        /// A key named `id` with the shared `secret`.
        /// - Parameters:
        ///   - id: the key's public id.
        ///   - secret: the shared secret.
        public init(id: String, secret: Data) {
            self.id = id
            self.secret = secret
        }
    }

    /// How one endpoint is signed.
    public enum Rule: Sendable {
        /// Not signed.
        case unsigned
        /// Signed with this key instead of the signer's.
        case key(Key)
    }

    /// The key of every endpoint no rule names.
    let key: Key
    /// Endpoint path prefix (as the service writes paths, `"public/"`) → rule.
    let rules: [String: Rule]
    /// Unix seconds now; injectable for tests.
    var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    /// A fresh nonce; injectable for tests.
    var nonce: @Sendable () -> String = { CacheSecret.hexString((0..<16).map { _ in UInt8.random(in: 0...255) }) }

    /// A signer using `key`, except where `rules` says otherwise.
    /// - Parameters:
    ///   - key: the key of every endpoint no rule names.
    ///   - rules: endpoint path prefix → `.unsigned` or another key; the longest prefix wins.
    public init(key: Key, rules: [String: Rule] = [:]) {
        self.key = key
        self.rules = rules
    }

    static let keyIDField = HTTPField.Name("X-Key-Id")!
    static let timestampField = HTTPField.Name("X-Timestamp")!
    static let nonceField = HTTPField.Name("X-Nonce")!
    static let signatureField = HTTPField.Name("X-Signature")!
    /// The fields a signature adds: dropped with the credential on a redirect to another
    /// origin (`RedirectHandler`).
    static let fieldNames: Set<HTTPField.Name> = [keyIDField, timestampField, nonceField, signatureField]

    /// The key for an endpoint, nil when it is unsigned.
    func key(forEndpoint path: String) -> Key? {
        let path = Self.endpointForm(path)
        var best: (prefix: Substring, written: String, rule: Rule)?
        for (written, rule) in rules {
            let prefix = Self.endpointForm(written)
            guard Self.covers(prefix, path) else { continue }
            // The longest wins; between two that are written differently but read the same
            // (`"/admin"` and `"admin"`), the first in byte order, not the table's order.
            if let best,
                best.prefix.utf8.count > prefix.utf8.count
                    || (best.prefix.utf8.count == prefix.utf8.count
                        && best.written.utf8.lexicographicallyPrecedes(written.utf8))
            {
                continue
            }
            best = (prefix, written, rule)
        }
        switch best?.rule {
        case nil: return key
        case .unsigned?: return nil
        case .key(let other)?: return other
        }
    }

    /// A path as the request sends it, relative to the server: `RelativePath`'s normal form
    /// (percent-encoded, escapes in upper-case hex, without the leading `/` and `./`), so that a
    /// rule and an endpoint written differently (`"a b"`, `"a%20b"`) but sent alike are one
    /// path. A path `RelativePath` refuses (no request is sent for it) is taken as written,
    /// without the leading `/` and `./`.
    private static func endpointForm(_ path: String) -> Substring {
        if let parsed = try? RelativePath(path) { return Substring(parsed.encoded) }
        var path = Substring(path)
        // By bytes, as `covers` compares: `"./"` followed by a combining mark is not `./`.
        while true {
            if path.utf8.first == UInt8(ascii: "/") {
                path = Substring(path.utf8.dropFirst())
            } else if path.utf8.starts(with: "./".utf8) {
                path = Substring(path.utf8.dropFirst(2))
            } else {
                return path
            }
        }
    }

    /// Whether a rule's prefix covers an endpoint path: whole segments only, so `public`
    /// covers `public`, `public/…` and `public?…` but not `publications/…`.
    ///
    /// Compared by bytes: `hasPrefix` takes canonically equivalent Unicode for equal (KELVIN
    /// SIGN for `K`, `é` composed for `e` and U+0301), which the server sees as two paths.
    private static func covers(_ prefix: Substring, _ path: Substring) -> Bool {
        let (prefix, path) = (prefix.utf8, path.utf8)
        guard path.starts(with: prefix) else { return false }
        guard let last = prefix.last, last != UInt8(ascii: "/"), path.count > prefix.count else { return true }
        let next = path[path.index(path.startIndex, offsetBy: prefix.count)]
        return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
    }

    /// Signs one attempt: sets the four fields (replacing an earlier attempt's).
    /// - Parameters:
    ///   - request: the request as it will be sent.
    ///   - endpointPath: the path the service wrote, for `rules`.
    /// - Throws: `CourierError.invalidRequest` when a body file cannot be read.
    func sign(_ request: inout PreparedRequest, endpointPath: String) throws(CourierError) {
        guard let key = key(forEndpoint: endpointPath) else { return }
        let timestamp = String(now())
        let nonce = nonce()
        let text = Self.canonicalText(
            method: request.head.method.rawValue, target: request.head.path ?? "/",
            bodyDigest: try Self.bodyDigest(request.body), timestamp: timestamp, nonce: nonce)
        let signature = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: key.secret))
        request.head.headerFields[Self.keyIDField] = key.id
        request.head.headerFields[Self.timestampField] = timestamp
        request.head.headerFields[Self.nonceField] = nonce
        request.head.headerFields[Self.signatureField] = CacheSecret.hexString(signature)
    }

    /// Whether a request as a server received it carries a valid signature under `key`: for
    /// servers written in Swift (the demo's fixture API).
    /// - Parameters:
    ///   - method: the method.
    ///   - target: the path with its query, as received.
    ///   - body: the body as received.
    ///   - field: the request's header field of a name.
    ///   - key: the key the server expects.
    package static func isValid(
        method: String, target: String, body: Data, field: (HTTPField.Name) -> String?, key: Key
    ) -> Bool {
        guard field(keyIDField) == key.id, let timestamp = field(timestampField), let nonce = field(nonceField),
            let signature = field(signatureField), let digest = try? bodyDigest(body.isEmpty ? nil : .data(body))
        else { return false }
        let text = canonicalText(
            method: method, target: target, bodyDigest: digest, timestamp: timestamp, nonce: nonce)
        let expected = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: key.secret))
        return CacheSecret.hexString(expected) == signature
    }

    /// The text that is signed.
    /// - Parameters:
    ///   - method: the method.
    ///   - target: the path with its query, as sent.
    ///   - bodyDigest: lowercase hex SHA-256 of the body.
    ///   - timestamp: Unix seconds.
    ///   - nonce: the nonce.
    static func canonicalText(method: String, target: String, bodyDigest: String, timestamp: String, nonce: String)
        -> String
    {
        let path: Substring
        var items: [Substring] = []
        if let mark = target.firstIndex(of: "?") {
            path = target[..<mark]
            items = target[target.index(after: mark)...].split(separator: "&")
        } else {
            path = target[...]
        }
        let sorted = items.map { item -> (name: [UInt8], value: [UInt8], item: Substring) in
            let equals = item.firstIndex(of: "=") ?? item.endIndex
            let value = equals == item.endIndex ? Substring() : item[item.index(after: equals)...]
            return (Array(item[..<equals].utf8), Array(value.utf8), item)
        }.sorted {
            $0.name != $1.name
                ? $0.name.lexicographicallyPrecedes($1.name) : $0.value.lexicographicallyPrecedes($1.value)
        }
        let query = sorted.map { String($0.item) }.joined(separator: "&")
        return [method, String(path), query, bodyDigest, timestamp, nonce].joined(separator: "\n")
    }

    /// Lowercase hex SHA-256 of the body's bytes (file parts read from disk).
    static func bodyDigest(_ body: RequestBody?) throws(CourierError) -> String {
        var hash = SHA256()
        for segment in body?.segments ?? [] {
            switch segment {
            case .data(let data):
                hash.update(data: data)
            case .file(let path):
                guard let handle = FileHandle(forReadingAtPath: path) else {
                    throw CourierError(.invalidRequest, "cannot read the body file at \(path) to sign it")
                }
                defer { try? handle.close() }
                // A read error ends the signing, not the file: a digest of part of it would sign
                // something else than what is sent, and the server's refusal would not say why.
                while true {
                    let chunk: Data?
                    do {
                        chunk = try handle.read(upToCount: 1 << 16)
                    } catch {
                        throw CourierError(
                            .invalidRequest, "cannot read the body file at \(path) to sign it", underlying: error)
                    }
                    guard let chunk, !chunk.isEmpty else { break }
                    hash.update(data: chunk)
                }
            case .stream:
                throw CourierError(
                    .invalidRequest, "a streamed body (RequestBody.stream) cannot be signed; use a file or data body")
            }
        }
        return CacheSecret.hexString(hash.finalize())
    }
}

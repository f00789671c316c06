import Crypto
import Foundation
import HTTPTypes

/// What makes two calls the same request: computed once per call, and the one key of
/// de-duplication, the request interval and the double-tap veto.
///
/// Two calls have the same identity only when everything that can change the answer is the
/// same:
/// - the method;
/// - the URL: the server (scheme, authority, path prefix), the path and the query, general
///   parameters included and real-time parameters (timestamp, nonce) left out, so that calls
///   with a timestamp are still the same request;
/// - the credential, as a one-way digest of the values of every credential field the call
///   sends (the client's, an authentication interceptor's, or the call's own headers), never
///   the values themselves;
/// - every other header field of the call (Accept, Accept-Language, Accept-Encoding, …);
/// - a digest of the body;
/// - the call's options that change the answer: the response serializer and model type, and
///   the cache policy;
/// - the client that sends it: two clients may share one `ServiceConfiguration` (and so its
///   gates) but not their answers, whatever their settings.
///
/// Kept in memory only. The cache keeps its own keyed identity.
struct RequestIdentity: Hashable, Sendable {
    /// The identity as one string (the key of the gates' tables).
    let key: String

    /// - Parameters:
    ///   - request: the call's request without real-time parameters, with the credential
    ///     fields the attempt will send.
    ///   - credentialQuery: the query items of the credential the attempts will carry (a
    ///     multi-part credential's), digested with the credential fields.
    ///   - credentialFieldNames: the fields whose values are digested instead of kept.
    ///   - responseType: the response serializer's type (its model type included).
    ///   - cachePolicy: the call's cache policy.
    ///   - client: the client that sends the call.
    init(
        request: PreparedRequest, credentialQuery: [(name: String, value: String)] = [],
        credentialFieldNames: Set<HTTPField.Name>, responseType: ObjectIdentifier,
        cachePolicy: CachePolicy, client: ObjectIdentifier? = nil
    ) {
        let head = request.head
        var key = head.method.rawValue
        key += " "
        key += head.scheme ?? ""
        key += "://"
        key += head.authority ?? ""
        key += head.path ?? "/"
        var fields: [(name: String, value: String)] = []
        var credential: [(name: String, value: String)] = []
        for field in head.headerFields {
            if credentialFieldNames.contains(field.name) {
                credential.append((field.name.canonicalName, field.value))
            } else {
                fields.append((field.name.canonicalName, field.value))
            }
        }
        for field in fields.sorted(by: Self.order) {
            key += "\n\(field.name): \(field.value)"
        }
        for item in credentialQuery { credential.append(("?" + item.name, item.value)) }
        if !credential.isEmpty {
            let text = credential.sorted(by: Self.order).map { "\($0.name): \($0.value)\n" }.joined()
            key += "\ncredential: " + Self.digest(text.utf8)
        }
        if let body = request.body {
            key += "\nbody:"
            for segment in body.segments {
                switch segment {
                case .data(let data): key += " data " + Self.digest(data)
                case .file(let path): key += " file " + Self.digest(path.utf8)
                // Read once: never the same as another call's body.
                case .stream(let source):
                    key += " stream " + String(UInt(bitPattern: ObjectIdentifier(source).hashValue), radix: 16)
                }
            }
        }
        key += "\nas: " + String(UInt(bitPattern: responseType), radix: 16)
        if cachePolicy != .useProtocolCachePolicy { key += "\ncache: \(cachePolicy)" }
        if let client { key += "\nclient: " + String(UInt(bitPattern: client), radix: 16) }
        self.key = key
    }

    private static func order(_ a: (name: String, value: String), _ b: (name: String, value: String)) -> Bool {
        a.name != b.name ? a.name < b.name : a.value < b.value
    }

    /// The one-way digest of a credential or a body: the one place the hash is chosen.
    static func digest(_ bytes: some Sequence<UInt8>) -> String {
        CacheSecret.hexString(SHA256.hash(data: Array(bytes)))
    }
}

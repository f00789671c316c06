import Crypto
import Foundation
import HTTPTypes

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

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
///   sends (the client's, an authentication interceptor's, or the call's own headers) and of
///   the `RequestSigner` key that signs it, never the values themselves;
/// - every other header field of the call (Accept, Accept-Language, Accept-Encoding, …);
/// - a digest of the body;
/// - the call's options that change the answer: the response serializer and model type, and
///   the cache policy;
/// - the call's `userInfo` values, when adapters may decorate its request from them (a
///   tenant): one tenant's calls are not another's for the interval and the veto either;
/// - the client that sends it: two clients may share one `ServiceConfiguration` (and so its
///   gates) but not their answers, whatever their settings;
/// - the service's cookie jar: its cookies go with every hop, and a redirect may lead where
///   one user's jar has a session the other's does not;
/// - the service, when it has adapters of the app's own (`PreparedService.hasOwnAdapters`):
///   two services on one configuration may write their own users' fields after the identity.
///
/// Kept in memory only. The cache keeps its own keyed identity.
struct RequestIdentity: Hashable, Sendable {
    /// The identity as one string (the key of the gates' tables).
    let key: String
    /// The key's hash, worked out once: the key of a default GET is hashed into the
    /// de-duplication table twice per call (`InFlightDeduplicator.Key`), and a kept identity
    /// serves many calls.
    let keyHash: Int

    /// What changes from one call of a call plan to the next and goes into its identity: the
    /// rest of the identity's inputs are the plan's or its service's (`CallRun.makeIdentity`).
    struct Varying: Sendable {
        var responseType: ObjectIdentifier
        /// The jar's Cookie field.
        var cookies: String?
        /// The client's credential fields, when the call's server gets them.
        var authorization: [HTTPField] = []
        var signingKey: RequestSigner.Key?

        /// Whether `other` makes the same identity: the same bytes everywhere (not `==`, which
        /// takes canonically equivalent Unicode strings for equal where the key's bytes and
        /// the server see two values), the fields in the same order.
        func isSame(as other: Varying) -> Bool {
            guard responseType == other.responseType, authorization.count == other.authorization.count,
                Self.same(cookies, other.cookies)
            else { return false }
            for index in authorization.indices {
                guard Self.same(authorization[index].name.canonicalName, other.authorization[index].name.canonicalName),
                    Self.same(authorization[index].value, other.authorization[index].value)
                else { return false }
            }
            switch (signingKey, other.signingKey) {
            case (.none, .none): return true
            case (.some(let a), .some(let b)): return Self.same(a.id, b.id) && a.secret == b.secret
            default: return false
            }
        }

        private static func same(_ one: String?, _ two: String?) -> Bool {
            switch (one, two) {
            case (.none, .none): return true
            case (.some(let a), .some(let b)): return RequestHeadCache.same(a, b)
            default: return false
            }
        }
    }

    /// A call plan's last identity and what changed it (`Varying`). It holds the client's
    /// credential fields and the jar's cookies in memory only, as the client and the jar do,
    /// until the plan's next call with other values replaces it or the plan goes.
    final class Memo: Sendable {
        let varying: Varying
        let identity: RequestIdentity

        init(varying: Varying, identity: RequestIdentity) {
            self.varying = varying
            self.identity = identity
        }
    }

    /// - Parameters:
    ///   - request: the call's request without real-time parameters, with the credential
    ///     fields the attempt will send.
    ///   - credentialQuery: the query items of the credential the attempts will carry (a
    ///     multi-part credential's), digested with the credential fields.
    ///   - credentialFieldNames: the fields whose values are digested instead of kept.
    ///   - responseType: the response serializer's type (its model type included).
    ///   - cachePolicy: the call's cache policy.
    ///   - client: the client that sends the call (`HTTPClient.identityNumber`).
    ///   - cookieJar: the service's own cookie jar (`CookieJar.identityNumber`), if any.
    ///   - signingKey: the key the service's `RequestSigner` signs the call with, if any.
    ///   - service: the service (`ServiceCore.identityNumber`), when it has adapters of the
    ///     app's own.
    ///   - userInfo: the call's `userInfo` values as text (`UserInfo.appValuesText`), for a
    ///     call whose adapters may decorate its request from them (a tenant).
    init(
        request: PreparedRequest, credentialQuery: [(name: String, value: String)] = [],
        credentialFieldNames: Set<HTTPField.Name>, responseType: ObjectIdentifier,
        cachePolicy: CachePolicy, client: UInt64? = nil, cookieJar: UInt64? = nil,
        signingKey: RequestSigner.Key? = nil, service: UInt64? = nil, userInfo: String? = nil
    ) {
        let head = request.head
        // Built as bytes, in one buffer, and made a string once: this runs for every
        // de-duplicated GET (the default), and `String.append` costs hundreds of instructions
        // a piece.
        var key = KeyBytes()
        key.append(head.method.rawValue)
        key.append(" ")
        key.append(head.scheme ?? "")
        key.append("://")
        key.append(head.authority ?? "")
        key.append(head.path ?? "/")
        var fields: [HTTPField] = []
        fields.reserveCapacity(head.headerFields.count)
        var credential: [(name: String, value: String)] = []
        for field in head.headerFields {
            if Self.isCredential(field.name, among: credentialFieldNames) {
                credential.append((field.name.canonicalName, field.value))
            } else {
                fields.append(field)
            }
        }
        // By name only: fields of one name keep their order, which is part of their meaning
        // (`Accept-Language: de` then `fr` prefers German; `fr` then `de`, French).
        if fields.count > 1 { fields = Self.sortedByName(fields) { $0.name.canonicalName } }
        for field in fields {
            key.append("\n")
            key.append(field.name.canonicalName)
            key.append(": ")
            key.append(field.value)
        }
        for item in credentialQuery { credential.append(("?" + item.name, item.value)) }
        // Another key is another user's (or app's) request, though the fields it adds are made
        // per attempt.
        if let signingKey { credential.append(("signer " + signingKey.id, signingKey.secret.base64EncodedString())) }
        if !credential.isEmpty {
            let text = Self.sortedByName(credential) { $0.name }.map { "\($0.name): \($0.value)\n" }.joined()
            key.append("\n@credential: ")
            key.append(Self.digest(text.utf8))
        }
        if let body = request.body {
            key.append("\n@body:")
            for segment in body.segments {
                switch segment {
                case .data(let data):
                    key.append(" data ")
                    key.append(Self.digest(data))
                case .file(let path):
                    key.append(" file ")
                    key.append(Self.digest((path + "\u{0}" + Self.fileVersion(path)).utf8))
                // Read once: never the same as another call's body.
                case .stream(let source):
                    key.append(" stream ")
                    key.appendHex(UInt(source.identityNumber))
                }
            }
        }
        if let userInfo {
            key.append("\n@info: ")
            key.append(userInfo.replacingOccurrences(of: "\n", with: "\\n"))
        }
        key.append("\n@as: ")
        key.appendHex(UInt(bitPattern: responseType))
        if cachePolicy != .useProtocolCachePolicy { key.append("\n@cache: \(cachePolicy)") }
        if let client {
            key.append("\n@client: ")
            key.appendHex(UInt(client))
        }
        if let cookieJar {
            key.append("\n@jar: ")
            key.appendHex(UInt(cookieJar))
        }
        if let service {
            key.append("\n@service: ")
            key.appendHex(UInt(service))
        }
        self.key = String(decoding: key.bytes, as: UTF8.self)
        keyHash = self.key.hashValue
    }

    /// The key's UTF-8 bytes while it is built.
    private struct KeyBytes {
        var bytes: [UInt8] = []

        init() { bytes.reserveCapacity(256) }

        /// Appends `text` in ASCII: a byte past ASCII, and `%`, as `%` and two hexadecimal
        /// digits (`percentEncodingNonASCII(_:andPercent:)`). The key is compared and hashed as
        /// a `String`, whose `==` takes canonically equivalent Unicode strings for equal (`café`
        /// composed and decomposed): two values that differ on the wire must differ in the key.
        mutating func append(_ text: String) {
            var text = percentEncodingNonASCII(text, andPercent: true)
            text.withUTF8 { bytes.append(contentsOf: $0) }
        }

        /// `value` in lowercase hexadecimal, as `String(value, radix: 16)` writes it.
        mutating func appendHex(_ value: UInt) {
            var digits: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &digits) { buffer in
                var rest = value
                var start = buffer.count
                repeat {
                    start -= 1
                    let digit = UInt8(truncatingIfNeeded: rest & 0xf)
                    buffer[start] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") - 10 + digit
                    rest >>= 4
                } while rest != 0
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start...]))
            }
        }
    }

    /// Whether `name` is a credential field: a scan, not a hash, for the few names a client
    /// has (a name's equality compares its canonical form, a small string).
    private static func isCredential(_ name: HTTPField.Name, among names: Set<HTTPField.Name>) -> Bool {
        guard names.count <= 16 else { return names.contains(name) }
        for candidate in names where candidate == name { return true }
        return false
    }

    /// `items` sorted by `name`, the items of one name in their order: stable whatever the sort
    /// does, by the item's index; `items` as they are when already in order (the common case).
    private static func sortedByName<Item>(_ items: [Item], _ name: (Item) -> String) -> [Item] {
        var sorted = true
        for index in items.indices.dropFirst() where name(items[index]) < name(items[index - 1]) {
            sorted = false
            break
        }
        if sorted { return items }
        return items.enumerated().sorted { a, b in
            let (one, two) = (name(a.element), name(b.element))
            return one != two ? one < two : a.offset < b.offset
        }.map(\.element)
    }

    /// Which version of the file at `path` a body would send: its device, inode, size and
    /// modification time (to the nanosecond), or `missing`. The same path with other contents
    /// (a photo exported again to the same temporary file) is another body; the file is not
    /// read for it.
    static func fileVersion(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return "missing" }
        return "\(info.st_dev) \(info.st_ino) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
    }

    /// A one-way digest of a request head as the service's own adapters left it: its target
    /// without the attempt's real-time parameters (`leavingOut`) and every field in order, each
    /// piece length-prefixed. Part of the de-duplication key of a service whose adapters write
    /// after the identity (its user's token, from the app's own session store): two GETs are one
    /// transfer only when the adapters wrote the same.
    static func adaptedHeadDigest(_ head: HTTPRequest, leavingOut realTimeNames: Set<String>) -> String {
        var target = (head.scheme ?? "") + "://" + (head.authority ?? "") + (head.path ?? "/")
        target = CacheRequest.removingQueryItems(named: realTimeNames, from: target)
        var text = head.method.rawValue + "\n" + String(target.utf8.count) + ":" + target
        for field in head.headerFields {
            appendField(field, to: &text)
        }
        return digest(text.utf8)
    }

    /// A one-way digest of the credentials a request head carries as the service's own
    /// adapters left it: the values of its credential fields (`names`, and those `Redaction`
    /// always hides) and of its query items whose names hold a secret (`queryNames`, and those
    /// `Redaction` hides), without the attempt's real-time parameters; nil when it carries none.
    /// Part of the key of the request interval and the double-tap veto of a service whose
    /// adapters write the app's current user: one user's call does not hold back the next
    /// user's. Credentials only, not every field: one an adapter makes new for each call (a
    /// request id) would free every call from its interval.
    static func adaptedCredentialDigest(
        _ head: HTTPRequest, names: Set<HTTPField.Name>, queryNames: Set<String>,
        leavingOut realTimeNames: Set<String>
    ) -> String? {
        var text = ""
        for field in head.headerFields
        where Redaction.alwaysRedacted.contains(field.name) || names.contains(field.name) {
            appendField(field, to: &text)
        }
        if let target = head.path, let mark = target.firstIndex(of: "?") {
            for pair in target[target.index(after: mark)...].split(separator: "&") {
                let name = RelativePath.percentDecoded(pair[..<(pair.firstIndex(of: "=") ?? pair.endIndex)])
                guard !realTimeNames.contains(name),
                    queryNames.contains(name) || Redaction.default.isRedacted(queryName: name)
                else { continue }
                text += "\n?\(pair.utf8.count):\(pair)"
            }
        }
        return text.isEmpty ? nil : digest(text.utf8)
    }

    /// Appends one field to a digest's text, name and value length-prefixed.
    private static func appendField(_ field: HTTPField, to text: inout String) {
        let name = field.name.canonicalName
        text += "\n\(name.utf8.count):\(name)\(field.value.utf8.count):\(field.value)"
    }

    /// The one-way digest of a credential or a body: the one place the hash is chosen.
    static func digest(_ bytes: some Sequence<UInt8>) -> String {
        CacheSecret.hexString(SHA256.hash(data: Array(bytes)))
    }
}

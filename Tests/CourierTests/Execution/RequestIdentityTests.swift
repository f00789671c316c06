import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The request identity without I/O: what is in it, what is not, and that the credential is
/// never in it in clear.
@Suite struct RequestIdentityTests {
    static let apiKey = HTTPField.Name("X-Api-Key")!
    static let names: Set<HTTPField.Name> = [.authorization, .cookie, .proxyAuthorization, apiKey]

    static func identity(
        _ method: HTTPRequest.Method = .get, path: String = "/feed?page=1", fields: HTTPFields = [:],
        body: RequestBody? = nil, as type: Any.Type = String.self, cachePolicy: CachePolicy = .useProtocolCachePolicy,
        userInfo: String? = nil
    ) -> RequestIdentity {
        let head = HTTPRequest(
            method: method, scheme: "https", authority: "api.example.com", path: path, headerFields: fields)
        return RequestIdentity(
            request: PreparedRequest(head: head, body: body), credentialFieldNames: names,
            responseType: ObjectIdentifier(type), cachePolicy: cachePolicy, userInfo: userInfo)
    }

    @Test func sameRequestSameIdentity() {
        let fields: HTTPFields = [.accept: "application/json", .acceptLanguage: "fr", .authorization: "Bearer a"]
        #expect(Self.identity(fields: fields) == Self.identity(fields: fields))
        // The order fields were set in does not matter.
        let reordered: HTTPFields = [.authorization: "Bearer a", .acceptLanguage: "fr", .accept: "application/json"]
        #expect(Self.identity(fields: fields) == Self.identity(fields: reordered))
    }

    @Test func theKeyReadsAsTheRequestWithSortedFieldsAndItsTypeAndClient() {
        let client: UInt64 = 0xC0FFEE
        let fields: HTTPFields = [
            .acceptLanguage: "fr", .accept: "application/json", .accept: "text/plain", .authorization: "Bearer a",
        ]
        let head = HTTPRequest(
            method: .get, scheme: "https", authority: "api.example.com", path: "/feed?page=1", headerFields: fields)
        let identity = RequestIdentity(
            request: PreparedRequest(head: head), credentialFieldNames: Self.names,
            responseType: ObjectIdentifier(Int.self), cachePolicy: .useProtocolCachePolicy,
            client: client)
        let lines = identity.key.split(separator: "\n").map(String.init)
        #expect(lines.first == "GET https://api.example.com/feed?page=1")
        // Sorted by name, the fields of one name in their order; the credential only as a
        // digest; the identity's own lines marked with `@`, which no field name holds.
        #expect(
            Array(lines.dropFirst().prefix(3)) == [
                "accept: application/json", "accept: text/plain", "accept-language: fr",
            ])
        #expect(lines.contains { $0.hasPrefix("@credential: ") && !$0.contains("Bearer") })
        #expect(lines.contains("@as: " + String(UInt(bitPattern: ObjectIdentifier(Int.self)), radix: 16)))
        #expect(lines.last == "@client: " + String(client, radix: 16))
    }

    /// The fields of one name mean something in their order (`Accept-Language: de` then `fr`
    /// prefers German). On the old code they were sorted by value, and the two orders made one
    /// identity: one call got the other's answer.
    @Test func fieldsOfOneNameInAnotherOrderAreAnotherRequest() {
        let germanFirst = Self.identity(fields: [.acceptLanguage: "de", .acceptLanguage: "fr"])
        let frenchFirst = Self.identity(fields: [.acceptLanguage: "fr", .acceptLanguage: "de"])
        #expect(germanFirst != frenchFirst)
        // Other names still do not depend on the order they were set in.
        let one = Self.identity(fields: [.accept: "a", .acceptLanguage: "de", .accept: "b"])
        let two = Self.identity(fields: [.acceptLanguage: "de", .accept: "a", .accept: "b"])
        #expect(one == two)
    }

    /// What the service's own adapters wrote (part of a GET's sharing key): another token or
    /// another order of fields is another digest, the attempt's real-time parameters are left
    /// out (a timestamp does not stop two GETs from sharing), and a value cannot pass for a
    /// field boundary.
    @Test func theAdaptedHeadDigestTellsWhatTheAdaptersWroteApart() {
        func digest(_ path: String, _ fields: HTTPFields, leavingOut names: Set<String> = []) -> String {
            var head = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: path)
            head.headerFields = fields
            return RequestIdentity.adaptedHeadDigest(head, leavingOut: names)
        }
        let alice = digest("/feed", [.authorization: "Bearer alice"])
        #expect(alice == digest("/feed", [.authorization: "Bearer alice"]))
        #expect(alice != digest("/feed", [.authorization: "Bearer bob"]))
        #expect(alice != digest("/feed?user=alice", [.authorization: "Bearer alice"]))
        #expect(
            digest("/feed?ts=1&page=2", [.authorization: "Bearer alice"], leavingOut: ["ts"])
                == digest("/feed?page=2&ts=2", [.authorization: "Bearer alice"], leavingOut: ["ts"]))
        #expect(
            digest("/feed", [.accept: "a", .acceptLanguage: "b"])
                != digest("/feed", [.acceptLanguage: "b", .accept: "a"]))
        let xa = HTTPField.Name("X-A")!
        let xb = HTTPField.Name("X-B")!
        #expect(digest("/feed", [xa: "1x-b:2"]) != digest("/feed", [xa: "1", xb: "2"]))
    }

    /// The `userInfo` values a call's adapters may read: other values, another identity;
    /// Courier's own `showsActivity` is not among them, and no two sets of values read alike.
    @Test func userInfoValuesAreTextThatTellsThemApart() {
        let tenant: UserInfoKey = "tenant"
        let other: UserInfoKey = "other"
        #expect(UserInfo([tenant: "one"]).appValuesText != UserInfo([tenant: "two"]).appValuesText)
        #expect(UserInfo([tenant: "one"]).appValuesText == UserInfo([tenant: "one"]).appValuesText)
        #expect(UserInfo([tenant: 1]).appValuesText != UserInfo([tenant: "1"]).appValuesText)
        #expect(UserInfo([.showsActivity: true]).appValuesText == nil)
        #expect(
            UserInfo([tenant: "one", .showsActivity: true]).appValuesText == UserInfo([tenant: "one"]).appValuesText)
        #expect(
            UserInfo([tenant: "a;5:other=1:b", other: "c"]).appValuesText
                != UserInfo([tenant: "a", other: "c"]).appValuesText)
        let one = Self.identity(userInfo: UserInfo([tenant: "one"]).appValuesText)
        let two = Self.identity(userInfo: UserInfo([tenant: "two"]).appValuesText)
        #expect(one != two)
        #expect(one != Self.identity())
    }

    /// A tenant's token as `Data` read as its length (`32 bytes`): two tenants with tokens of
    /// one length were one identity, and one's request interval and tap in flight held back
    /// the other's call. Bytes are digested now; and a large value stands in the identity (and
    /// in the interval table's keys) as a digest, not as its whole text.
    @Test func userInfoDataValuesAreToldApartByTheirBytesAndLargeValuesAreDigested() {
        let tenant: UserInfoKey = "tenant"
        let one = UserInfo([tenant: Data(repeating: 1, count: 32)]).appValuesText
        let two = UserInfo([tenant: Data(repeating: 2, count: 32)]).appValuesText
        #expect(one != two)
        #expect(one == UserInfo([tenant: Data(repeating: 1, count: 32)]).appValuesText)
        let large = Array(repeating: "segment", count: 10_000)
        let text = UserInfo([tenant: large]).appValuesText ?? ""
        #expect(text.utf8.count < 200)
        var changed = large
        changed[9_999] = "other"
        #expect(text != UserInfo([tenant: changed]).appValuesText)
        #expect(text == UserInfo([tenant: large]).appValuesText)
    }

    /// A header field named like one of the identity's own lines cannot stand for it: the
    /// identity's lines start with `@`, which a field name cannot hold.
    @Test func aFieldNamedLikeTheIdentitysOwnLinesIsNotTakenForThem() {
        let withCredential = Self.identity(fields: [.authorization: "Bearer a"])
        let digest = RequestIdentity.digest("authorization: Bearer a\n".utf8)
        #expect(withCredential.key.contains(digest))
        let forged = Self.identity(fields: [HTTPField.Name("Credential")!: digest])
        #expect(forged != withCredential)
        #expect(HTTPField.Name("@credential") == nil)
    }

    @Test func everythingThatChangesTheAnswerChangesTheIdentity() {
        let base = Self.identity(fields: [.accept: "application/json"])
        let others = [
            Self.identity(.head, fields: [.accept: "application/json"]),
            Self.identity(path: "/feed?page=2", fields: [.accept: "application/json"]),
            Self.identity(fields: [.accept: "text/plain"]),
            Self.identity(fields: [.accept: "application/json", .acceptLanguage: "de"]),
            Self.identity(fields: [.accept: "application/json", .acceptEncoding: "gzip"]),
            Self.identity(fields: [.accept: "application/json", HTTPField.Name("X-Tenant")!: "7"]),
            Self.identity(fields: [.accept: "application/json", .authorization: "Bearer a"]),
            Self.identity(fields: [.accept: "application/json", Self.apiKey: "k"]),
            Self.identity(fields: [.accept: "application/json"], body: .data(Data("x".utf8))),
            Self.identity(fields: [.accept: "application/json"], as: Int.self),
            Self.identity(fields: [.accept: "application/json"], cachePolicy: .reloadIgnoringCache),
        ]
        for other in others { #expect(other != base, "\(other.key)") }
        #expect(Set(others).count == others.count)
    }

    @Test func credentialsDifferButAreNeverInTheKey() {
        let alice = Self.identity(fields: [Self.apiKey: "alice-SECRET-1", .cookie: "sid=S2"])
        let bob = Self.identity(fields: [Self.apiKey: "bob-SECRET-3", .cookie: "sid=S2"])
        #expect(alice != bob)
        for key in [alice.key, bob.key] {
            #expect(!key.contains("SECRET"))
            #expect(!key.contains("S2"))
        }
        #expect(alice.key.contains("credential: "))
    }

    @Test func bodiesAreDigested() {
        let one = Self.identity(.post, body: .data(Data("{\"a\":1}".utf8)))
        #expect(one == Self.identity(.post, body: .data(Data("{\"a\":1}".utf8))))
        #expect(one != Self.identity(.post, body: .data(Data("{\"a\":2}".utf8))))
        #expect(!one.key.contains("\"a\""))
        #expect(Self.identity(.post, body: .file(path: "/a")) != Self.identity(.post, body: .file(path: "/b")))
    }

    /// A file body is the file's contents: the same path written again (a photo exported again
    /// to one temporary file) is another body for the interval and the veto, the same file
    /// unchanged the same body. On the old code only the path counted.
    @Test func aFileBodyWrittenAgainAtTheSamePathIsAnotherBody() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-identity-\(UUID()).bin")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("first".utf8).write(to: url)
        let first = Self.identity(.post, body: .file(path: url.path))
        #expect(first == Self.identity(.post, body: .file(path: url.path)))
        try Data("second, longer".utf8).write(to: url)
        let longer = Self.identity(.post, body: .file(path: url.path))
        #expect(longer != first)
        // The same length, another modification time.
        try Data("second, LONGER".utf8).write(to: url)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 1_000_000)], ofItemAtPath: url.path)
        #expect(Self.identity(.post, body: .file(path: url.path)) != longer)
        try FileManager.default.removeItem(at: url)
        #expect(Self.identity(.post, body: .file(path: url.path)) != first)
    }

    @Test func digestIsSHA256() {
        #expect(
            RequestIdentity.digest("abc".utf8) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

extension RequestIdentityTests {
    /// A client made after another was released must not inherit its identity: the gates
    /// (request interval, double-tap veto) keep keys after the call, and a service
    /// configuration, with its gates, may be shared by clients that come and go. The old key
    /// used the client's address, which the allocator hands out again.
    @Test func aClientMadeAfterAnotherWasReleasedNeverSharesItsIdentity() throws {
        let head = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/feed")
        var keys = Set<String>()
        for _ in 0..<20 {
            let client = try HTTPClient(configuration: .init())
            let identity = RequestIdentity(
                request: PreparedRequest(head: head), credentialFieldNames: Self.names,
                responseType: ObjectIdentifier(Int.self), cachePolicy: .useProtocolCachePolicy,
                client: client.identityNumber)
            keys.insert(identity.key)
        }
        #expect(keys.count == 20)
    }
}

extension RequestIdentityTests {
    /// A streamed body is read once, so no two calls with one are the same request, even when
    /// the second body's source takes the memory of the first, released one.
    @Test func streamedBodiesMadeOneAfterAnotherNeverShareAnIdentity() {
        let head = HTTPRequest(method: .put, scheme: "https", authority: "api.example.com", path: "/upload")
        var keys = Set<String>()
        for _ in 0..<20 {
            let body = RequestBody.stream(AsyncStream<Data> { $0.finish() }, length: 0)
            let identity = RequestIdentity(
                request: PreparedRequest(head: head, body: body), credentialFieldNames: Self.names,
                responseType: ObjectIdentifier(Int.self), cachePolicy: .useProtocolCachePolicy)
            keys.insert(identity.key)
        }
        #expect(keys.count == 20)
    }
    /// A plan reuses its last identity only for values that are the same byte for byte: two
    /// credentials Swift's `==` takes for equal (canonically equivalent Unicode) are two
    /// credentials to a server, and two identities.
    @Test func keptIdentitiesAreReusedForTheSameBytesOnly() {
        let composed = "Bearer caf\u{E9}"
        let decomposed = "Bearer cafe\u{301}"
        #expect(composed == decomposed)
        let type = ObjectIdentifier(String.self)
        func varying(_ value: String, cookies: String? = nil, key: RequestSigner.Key? = nil) -> RequestIdentity.Varying
        {
            RequestIdentity.Varying(
                responseType: type, cookies: cookies, authorization: [HTTPField(name: .authorization, value: value)],
                signingKey: key)
        }
        #expect(varying(composed).isSame(as: varying(composed)))
        #expect(!varying(composed).isSame(as: varying(decomposed)))
        #expect(
            Self.identity(fields: [.authorization: composed]) != Self.identity(fields: [.authorization: decomposed]))
        // Every other value counts too.
        #expect(!varying(composed).isSame(as: varying(composed, cookies: "session=1")))
        #expect(!varying(composed, cookies: "session=1").isSame(as: varying(composed, cookies: "session=2")))
        let one = RequestSigner.Key(id: "k", secret: Data([1]))
        let two = RequestSigner.Key(id: "k", secret: Data([2]))
        #expect(varying(composed, key: one).isSame(as: varying(composed, key: one)))
        #expect(!varying(composed, key: one).isSame(as: varying(composed, key: two)))
        #expect(!varying(composed, key: one).isSame(as: varying(composed)))
        var otherType = varying(composed)
        otherType.responseType = ObjectIdentifier(Int.self)
        #expect(!varying(composed).isSame(as: otherType))
        var none = varying(composed)
        none.authorization = []
        #expect(!varying(composed).isSame(as: none))
    }
}

import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Entries are scoped to the identity whose credentials fetched them, and credentials never
/// reach the disk in clear text.
@Suite struct CachePrivacyTests {
    let clock = ManualClock()
    let maxAge60 = CacheFixtures.response(200, ["Cache-Control": "max-age=60"])

    func request(_ headers: [String: String]) -> HTTPRequest {
        CacheFixtures.request("/me", headers: CacheFixtures.headers(headers))
    }

    @Test func oneUserNeverGetsAnothersEntry() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(request(["Authorization": "Bearer alice-token"]), maxAge60, body: "alice")
        cache.store(request(["Authorization": "Bearer bob-token"]), maxAge60, body: "bob")
        #expect(try cache.lookup(request(["Authorization": "Bearer alice-token"])).bodyString == "alice")
        #expect(try cache.lookup(request(["Authorization": "Bearer bob-token"])).bodyString == "bob")
        #expect(try cache.lookup(request([:])).isMiss)
        #expect(try cache.lookup(request(["Authorization": "Bearer mallory"])).isMiss)
    }

    @Test func cookiesScopeEntriesToo() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(request(["Cookie": "session=1"]), maxAge60, body: "one")
        #expect(try cache.lookup(request(["Cookie": "session=2"])).isMiss)
        #expect(try cache.lookup(request(["Cookie": "session=1"])).bodyString == "one")
    }

    @Test func privateResponsesBelongToTheirIdentity() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let privateResponse = CacheFixtures.response(200, ["Cache-Control": "private, max-age=60"])
        #expect(cache.store(request(["Authorization": "Bearer alice"]), privateResponse, body: "alice's"))
        #expect(try cache.lookup(request([:])).isMiss)
        #expect(try cache.lookup(request(["Authorization": "Bearer bob"])).isMiss)
        #expect(try cache.lookup(request(["Authorization": "Bearer alice"])).bodyString == "alice's")
    }

    @Test func explicitUserIdentitySurvivesTokenRotation() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let alice = CacheIdentity(user: "alice")
        cache.store(
            CacheRequest(request(["Authorization": "Bearer t1"]), identity: alice), response: maxAge60,
            body: Data("a".utf8),
            receivedWhole: true, requestTime: clock.now, responseTime: clock.now)
        let rotated = CacheRequest(request(["Authorization": "Bearer t2"]), identity: alice)
        #expect(try cache.lookup(rotated).isFresh)
        #expect(try cache.lookup(CacheRequest(request(["Authorization": "Bearer t2"]))).isMiss)
    }

    @Test func purgeRemovesOnlyThatIdentity() throws {
        let directory = TemporaryDirectory()
        let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        let alice = request(["Authorization": "Bearer alice"])
        let bob = request(["Authorization": "Bearer bob"])
        cache.store(alice, maxAge60, body: "alice")
        cache.store(CacheFixtures.request("/other", headers: alice.headerFields), maxAge60, body: "alice 2")
        cache.store(bob, maxAge60, body: "bob")
        cache.store(request([:]), maxAge60, body: "public")
        #expect(cache.purge(identity: CacheIdentity(credentialsIn: alice.headerFields)) == 2)
        #expect(try cache.lookup(alice).isMiss)
        #expect(try cache.lookup(bob).bodyString == "bob")
        #expect(try cache.lookup(request([:])).bodyString == "public")
        // And on disk: a new instance on the same folder sees the same.
        let reopened = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        #expect(try reopened.lookup(alice).isMiss)
        #expect(try reopened.lookup(bob).bodyString == "bob")
        #expect(reopened.purgeAllIdentities() == 1)
        #expect(try reopened.lookup(bob).isMiss)
        #expect(try reopened.lookup(request([:])).bodyString == "public")
    }

    @Test(arguments: [false, true])
    func purgingAnAuthorizationAlsoDropsEntriesFetchedWithCookiesToo(onDisk: Bool) throws {
        let directory = TemporaryDirectory()
        let cache =
            onDisk
            ? try CacheFixtures.diskCache(clock: clock, directory: directory.path)
            : try CacheFixtures.memoryCache(clock: clock)
        let aliceWithCookie = request(["Authorization": "Bearer alice", "Cookie": "theme=dark"])
        let bobWithCookie = request(["Authorization": "Bearer bob", "Cookie": "theme=dark"])
        cache.store(aliceWithCookie, maxAge60, body: "alice")
        cache.store(bobWithCookie, maxAge60, body: "bob")
        cache.store(request(["Cookie": "theme=dark"]), maxAge60, body: "cookie only")
        #expect(cache.purge(identity: CacheIdentity(credentialsIn: [.authorization: "Bearer alice"])) == 1)
        #expect(try cache.lookup(aliceWithCookie).isMiss)
        #expect(try cache.lookup(bobWithCookie).bodyString == "bob")
        #expect(try cache.lookup(request(["Cookie": "theme=dark"])).bodyString == "cookie only")
    }

    @Test func credentialsNeverReachTheDiskInClearText() throws {
        let directory = TemporaryDirectory()
        do {
            let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
            let secret = "Bearer s3cr3t-token-value"
            let response = CacheFixtures.response(
                200,
                ["Cache-Control": "max-age=60", "Vary": "Authorization, Cookie", "Set-Cookie": "sid=c00kie-secret"])
            #expect(cache.store(request(["Authorization": secret, "Cookie": "sid=c00kie-secret"]), response))
            #expect(try cache.lookup(request(["Authorization": secret, "Cookie": "sid=c00kie-secret"])).isFresh)
        }
        var bytes = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            bytes.append(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/" + name)))
        }
        #expect(!bytes.isEmpty)
        #expect(bytes.range(of: Data("s3cr3t-token-value".utf8)) == nil)
        #expect(bytes.range(of: Data("c00kie-secret".utf8)) == nil)
    }

    @Test func identityDescriptionDoesNotLeakTheDigest() {
        let identity = CacheIdentity(credentialsIn: CacheFixtures.headers(["Authorization": "Bearer x"]))
        #expect(!identity.isAnonymous)
        #expect(!identity.description.contains("Bearer"))
        #expect(CacheIdentity(credentialsIn: [:]) == .anonymous)
    }
}

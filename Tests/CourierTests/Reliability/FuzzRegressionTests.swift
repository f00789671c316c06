import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Inputs the fuzz targets in `Fuzz/` crashed on, replayed as ordinary tests, plus every seed
/// and regression input under `Fixtures/fuzz/` run through the same entry points.
@Suite struct FuzzRegressionTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/fuzz")

    /// FuzzCacheEntry, first minute: `Age: 1e400` parsed as infinity, and serving the entry
    /// trapped converting the infinite age to `Int`. A server could crash any app caching it.
    @Test(arguments: ["1e400", "inf", "nan", "-5", "99999999999999999999", " 12 "])
    func hostileAgeHeaderIsIgnoredOrCapped(age: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/aged") { _ in
            // A lifetime of an hour: " 12 " leaves the copy fresh however long a loaded machine
            // (ThreadSanitizer at load 8 once took more than the 48 s that max-age=60 left)
            // keeps the second request waiting.
            ScriptedResponse(
                headers: [.cacheControl: "max-age=3600", HTTPField.Name("Age")!: age], body: Data("x".utf8))
        }
        let directory = TemporaryDirectory()
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .disk(directory: directory.path)))
        let client = try makeClient { $0.cache = cache }
        _ = try await client.send(HTTPRequest(.get, server.url("/aged")))
        let second = try await client.send(HTTPRequest(.get, server.url("/aged")))
        #expect(second.body == Data("x".utf8))
        // An invalid Age is ignored (the copy is fresh); a huge one is capped (stale, so the
        // origin is asked again and its own header comes back).
        let isFresh = (CacheEntry.deltaSeconds(age) ?? 0) < 3600
        #expect(second.isFromCache == isFresh)
        if second.isFromCache {
            let served = try #require(second.head.headerFields[HTTPField.Name("Age")!])
            let seconds = try #require(Int(served))
            #expect((0...2_147_483_648).contains(seconds))
        }
    }

    @Test func deltaSecondsFollowsRFC9111() {
        #expect(CacheEntry.deltaSeconds("120") == 120)
        #expect(CacheEntry.deltaSeconds(" 7 ") == 7)
        #expect(CacheEntry.deltaSeconds("99999999999999999999") == 2_147_483_648)
        for invalid in ["", "1e400", "inf", "nan", "-1", "1.5", "+3", "0x10"] {
            #expect(CacheEntry.deltaSeconds(invalid) == nil, "\(invalid)")
        }
    }

    /// Found reading the code the fuzzer pointed at: a year of 17 digits overflowed the day
    /// arithmetic of the HTTP date parser (a trap on storing the response).
    @Test func hostileDateHeadersDoNotTrap() async throws {
        for date in [
            "Sun, 06 Nov 99999999999999999 08:49:37 GMT", "Sun Nov  6 08:49:37 9223372036854775807",
            "Sunday, 06-Nov-94 08:49:37 GMT", "Sun, 06 Nov 1994 -8:49:37 GMT",
        ] {
            _ = HTTPDateFormat.parse(date)
        }
        #expect(HTTPDateFormat.parse("Sun, 06 Nov 99999999999999999 08:49:37 GMT") == nil)
        #expect(HTTPDateFormat.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))

        let server = try TestServer()
        defer { server.stop() }
        server.route("/dated") { _ in
            ScriptedResponse(
                headers: [
                    .cacheControl: "max-age=60", .date: "Sun, 06 Nov 99999999999999999 08:49:37 GMT",
                    .lastModified: "Sun Nov  6 08:49:37 9223372036854775807",
                    .expires: "Sun, 06 Nov 99999999999999999 08:49:37 GMT",
                ], body: Data("y".utf8))
        }
        let directory = TemporaryDirectory()
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .disk(directory: directory.path)))
        let client = try makeClient { $0.cache = cache }
        _ = try await client.send(HTTPRequest(.get, server.url("/dated")))
        #expect(try await client.send(HTTPRequest(.get, server.url("/dated"))).isFromCache)
    }

    /// FuzzURLComposition, on a seed: `./name:verb` is accepted and its normal form is
    /// `name:verb`, which `RelativePath` refuses as a scheme when given alone. The normal form
    /// is right on the wire (after the prefix and a `/`: `/v1/name:verb`, colon literal, no dot
    /// segment); the target's idempotence check now re-parses it as it is used, after a `/`.
    @Test func aColonInTheFirstSegmentStaysLiteralOnTheWire() throws {
        let base = try BaseURL("https://api.example.com/v1")
        let path = try RelativePath("./name:verb")
        #expect(path.segments == ["name:verb"])
        #expect(path.encoded == "name:verb")
        #expect(base.target(for: path) == "/v1/name:verb")
        #expect(try RelativePath("/" + path.encoded) == path)
        #expect(throws: CourierError.self) { try RelativePath(path.encoded) }
        let bytes = try Data(
            contentsOf: Self.fixtures.appendingPathComponent("FuzzURLComposition/regression-colon-first-segment"))
        #expect(bytes.first == 0 && String(decoding: bytes.dropFirst(), as: UTF8.self).hasSuffix("./name:verb"))
    }

    /// FuzzURLComposition, at once after its idempotence fix: the target's new "no dot segment
    /// in the normal form" check split the query too. Dot segments are normalised in the path
    /// only; a query is data and goes out as given (percent-encoded where needed).
    @Test func dotSegmentsInTheQueryAreLeftAlone() throws {
        let base = try BaseURL("https://[::1]:443/base")
        let path = try RelativePath("a?q=swift&p/./f")
        #expect(path.segments == ["a"])
        #expect(path.query == "q=swift&p/./f")
        #expect(base.target(for: path) == "/base/a?q=swift&p/./f")
        #expect(try RelativePath("/" + path.encoded) == path)
    }

    /// FuzzURLComposition, after 90 executions of its second 10-minute run: a base URL whose
    /// path prefix has an empty segment (`https://api.example.com/v://API.E…/a%20b/`) was
    /// refused with `.invalidRequest`, the code of the relative-path check it reuses, where a
    /// bad base URL is a `.configuration` error (as documented, and as the target asserts).
    @Test(arguments: ["https://api.example.com/v://x", "https://h/a//b", "http://h/%2e%2e/x", "https://h/a/../b"])
    func aBadBaseURLPathIsAConfigurationError(_ text: String) throws {
        let error = try #require(throws: CourierError.self) { try BaseURL(text) }
        #expect(error.code == .configuration)
        let bytes = try Data(
            contentsOf: Self.fixtures.appendingPathComponent("FuzzURLComposition/regression-base-prefix-empty-segment"))
        let saved = String(decoding: bytes.dropFirst(), as: UTF8.self)
        #expect(try #require(throws: CourierError.self) { try BaseURL(saved) }.code == .configuration)
    }

    /// FuzzURLComposition, after 3,900 executions of its third run: `https://api.exampleapi.e%20b/`
    /// was accepted, and Foundation read its host as `api.exampleapi.e b`. libcurl 7.88 decodes
    /// a percent-encoded host too (`http://loc%61lhost:9/` connects to localhost), so
    /// `good.example%2eevil.example` would reach good.example.evil.example while Courier
    /// compared the encoded authority. Such a host is refused; an IPv6 zone keeps its `%25`.
    @Test func aPercentEncodedBaseURLHostIsRefused() throws {
        for text in [
            "https://api.exampleapi.e%20b/", "https://good.example%2eevil.example/", "https://a%41b.example:8443/v1",
        ] {
            #expect(try #require(throws: CourierError.self) { try BaseURL(text) }.code == .configuration, "\(text)")
        }
        #expect(try BaseURL("http://[fe80::1%25eth0]:8080/x").authority == "[fe80::1%25eth0]:8080")
        let bytes = try Data(
            contentsOf: Self.fixtures.appendingPathComponent("FuzzURLComposition/regression-percent-encoded-host"))
        #expect(throws: CourierError.self) { try BaseURL(String(decoding: bytes.dropFirst(), as: UTF8.self)) }
    }

    /// FuzzURLComposition, 10-minute run on the merged library: `https://)ͅht` was accepted and
    /// Foundation read another host. libcurl converts a Unicode host with IDNA (`curl
    /// http://ｌｏｃａｌｈｏｓｔ:1/` connects to 127.0.0.1), so a base URL host must be ASCII.
    @Test func aBaseURLHostMustBeAnASCIIName() throws {
        for text in [
            "https://ｅｘａｍｐｌｅ.com/v1", "https://exämple.com", "https://)ͅht/", "https://a(b).example",
            "https://api.example.com:80a/", "https://:443/",
        ] {
            #expect(try #require(throws: CourierError.self) { try BaseURL(text) }.code == .configuration, "\(text)")
        }
        for text in ["https://xn--exmple-cua.com/v1", "http://127.0.0.1:8080", "https://my_host.internal"] {
            #expect(throws: Never.self, "\(text)") { _ = try BaseURL(text) }
        }
        let bytes = try Data(
            contentsOf: Self.fixtures.appendingPathComponent("FuzzURLComposition/regression-unicode-host"))
        #expect(throws: CourierError.self) { try BaseURL(String(decoding: bytes.dropFirst(), as: UTF8.self)) }
    }

    /// FuzzURLComposition, in the first CI-style smoke after its 10-minute run: `https://[]:443/e`
    /// was accepted (Foundation reads `[]` as a host) and composed a URL with no host. A
    /// bracketed host must now be an IPv6 address (with an optional zone), then at most a port.
    @Test func anInvalidIPv6LiteralIsRefused() throws {
        for text in [
            "https://[]:443/e", "http://[::g]/", "http://[::1", "http://[::1]x/", "http://[::1]:/", "http://[::1%25]/",
        ] {
            #expect(try #require(throws: CourierError.self) { try BaseURL(text) }.code == .configuration, "\(text)")
        }
        #expect(try BaseURL("http://[::1]:9000/api").authority == "[::1]:9000")
        #expect(try BaseURL("https://[2001:db8::1]").authority == "[2001:db8::1]")
        let bytes = try Data(
            contentsOf: Self.fixtures.appendingPathComponent("FuzzURLComposition/regression-empty-ipv6-literal"))
        let base = String(decoding: bytes.dropFirst().prefix { $0 != 0 }, as: UTF8.self)
        #expect(base == "https://[]:443/e")
        #expect(throws: CourierError.self) { try BaseURL(base) }
    }

    /// FuzzJSONDifferential, after 8.5 minutes: a timeout (over 10 s for one input under ASan)
    /// on 512 `[` then 512 `]`. The time was Foundation's, the oracle (about 1 s without ASan;
    /// Courier 4 ms): its decoder rebuilds the coding path for each failed `try?` of a generic
    /// value. Looking closer, Foundation also traps on exactly 513 unclosed `[`. The target now
    /// leaves documents nested deeper than 100 to Courier alone; Courier must take both inputs
    /// without trapping: the deepest valid document decodes, one more level is an error.
    @Test func deepNestingAtFoundationsLimitDecodesOrFailsCleanly() throws {
        let directory = Self.fixtures.appendingPathComponent("FuzzJSONDifferential")
        let deepest = try Data(contentsOf: directory.appendingPathComponent("regression-timeout-depth-512")).dropFirst()
        let value = try CourierJSONDecoder().decode(AnyJSON.self, from: Data(deepest))
        var depth = 0
        var level = value
        while case .array(let inner) = level {
            depth += 1
            guard let first = inner.first else { break }
            level = first
        }
        #expect(depth == 512)
        let unclosed = try Data(contentsOf: directory.appendingPathComponent("regression-unclosed-513")).dropFirst()
        #expect(unclosed.count == 513)
        #expect(throws: (any Error).self) { try CourierJSONDecoder().decode(AnyJSON.self, from: Data(unclosed)) }
        let tooDeep = Data((String(repeating: "[", count: 513) + String(repeating: "]", count: 513)).utf8)
        #expect(throws: (any Error).self) { try CourierJSONDecoder().decode(AnyJSON.self, from: tooDeep) }
    }

    /// FuzzCacheEntry, CI smoke on the merged library: a stored row whose response time lay
    /// past year 9999 trapped when a 304 merge wrote it as the entry's `Date` (Double to Int).
    @Test(arguments: [1e300, -1e300, .infinity, -.infinity, .nan, 253_402_300_800, -62_135_596_801])
    func anyDateFormatsWithoutTrapping(seconds: Double) throws {
        let text = HTTPDateFormat.format(Date(timeIntervalSince1970: seconds))
        let parsed = try #require(HTTPDateFormat.parse(text), "\(text)")
        let expected =
            seconds.isNaN ? 0 : min(max(seconds, -62_135_596_800), 253_402_300_799)
        #expect(parsed.timeIntervalSince1970 == expected, "\(text)")
    }

    /// Every seed of the response-head target parses within its invariants, the same way
    /// `Fuzz/Sources/FuzzResponseHead` feeds it (lines end at LF, kept).
    @Test func responseHeadCorpusReplays() throws {
        let directory = Self.fixtures.appendingPathComponent("FuzzResponseHead")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        var events: [String: String] = [:]
        for file in files {
            let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(file)))
            var lines: [[UInt8]] = []
            var start = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
                lines.append(Array(bytes[start...index]))
                start = index + 1
            }
            if start < bytes.count { lines.append(Array(bytes[start...])) }
            let outcome = ResponseHeadFuzzing.parse(lines: lines)
            #expect(outcome.violation == nil, "\(file): \(outcome.violation ?? "")")
            events[file] = outcome.lastEvent
        }
        #expect(events["seed-ok"] == "complete")
        #expect(events["seed-flood"] == "tooLarge")
        #expect(events["seed-badstatus"] == "invalid")
    }

    /// Every seed and saved crash input of the cache-entry target still decodes without trapping.
    @Test func cacheEntryCorpusReplays() throws {
        let directory = Self.fixtures.appendingPathComponent("FuzzCacheEntry")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(files.contains("regression-age-1e400"))
        #expect(files.contains("regression-response-time-past-9999"))
        var decoded = 0
        for file in files {
            let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(file)))
            if Self.replayCacheEntry(bytes) { decoded += 1 }
        }
        #expect(decoded > 0, "no seed decodes: the seeds no longer match the head format")
    }

    /// The same input split as `Fuzz/Sources/FuzzCacheEntry`.
    static func replayCacheEntry(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        func byte() -> UInt8 {
            defer { offset += 1 }
            return offset < bytes.count ? bytes[offset] : 0
        }
        func u64() -> UInt64 { (0..<8).reduce(0) { value, _ in value << 8 | UInt64(byte()) } }
        func field() -> String {
            let start = min(offset, bytes.count)
            var end = start
            while end < bytes.count, bytes[end] != 0 { end += 1 }
            offset = end + 1
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }
        let flags = byte()
        func time() -> Double {
            let raw = u64()
            return flags & 4 != 0 ? Double(bitPattern: raw) : 1_700_000_000 + Double(Int64(bitPattern: raw) % 1_000_000)
        }
        let times = (time(), time(), flags & 8 != 0 ? time() : .nan)
        let checksum = u64()
        let url = field()
        let variant = field()
        let length = Int(byte()) << 8 | Int(byte())
        let start = min(offset, bytes.count)
        let end = min(start + length, bytes.count)
        return CacheFuzzing.decodeStoredRow(
            head: Data(bytes[start..<end]), body: Data(bytes[end...]), url: url, variant: variant, times: times,
            hasQuery: flags & 2 != 0, checksum: flags & 1 != 0 ? checksum : nil)
    }
}

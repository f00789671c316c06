import Foundation
import HTTPTypes
import PropertyBased
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct RelativePathTests {
    @Test(arguments: [
        "https://evil.example/steal", "http://evil.example", "HTTPS://evil.example", "mailto:a@b.c",
        "javascript:alert(1)", "//evil.example/x", "//", "../admin", "users/../../admin", "users/..",
        "users/%2e%2e/admin", "users/%2E%2E/admin", "%2e%2e", "users/.%2e/x", "a\\b", "a/b#frag", "a\u{0}b",
        "a\r\nHost: evil", "users//1",
    ])
    func rejectsUnsafePaths(_ path: String) {
        #expect(throws: CourierError.self) { try RelativePath(path) }
        do {
            _ = try RelativePath(path)
        } catch let error as CourierError {
            #expect(error.code == .invalidRequest)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func encodesSegmentsAndKeepsValidEscapes() throws {
        #expect(try RelativePath("users/a b").encoded == "users/a%20b")
        #expect(try RelativePath("users/a%20b").encoded == "users/a%20b")
        #expect(try RelativePath("files/50%off").encoded == "files/50%25off")
        #expect(try RelativePath("tags/ça?x").encoded == "tags/%C3%A7a?x")
        #expect(try RelativePath("emoji/🚀").encoded == "emoji/%F0%9F%9A%80")
        #expect(try RelativePath("a/%2Fb").segments == ["a", "/b"])
        #expect(try RelativePath("a/%2Fb").encoded == "a/%2Fb")
    }

    /// An escape of bytes that are not UTF-8 (`%E9`, a Latin-1 `é`; `%FF`; the overlong `%C0%AE`)
    /// was decoded to U+FFFD and sent as `%EF%BF%BD`: another path than the caller's, and
    /// `files/%FE` and `files/%FF` one path (and one identity). Such a path is refused, not
    /// rewritten; escapes of UTF-8 are kept as they were.
    @Test(arguments: ["files/caf%E9", "files/%FF", "a/%C0%AE%C0%AE/b", "%FE", "a/%F0%9F%9A"])
    func anEscapeThatIsNotUTF8IsRefusedNotRewritten(_ path: String) throws {
        for parse in [{ try RelativePath(path) }, { try RelativePath(parsingCharacters: path) }] {
            let error = #expect(throws: CourierError.self) { _ = try parse() }
            #expect(error?.code == .invalidRequest)
        }
        #expect(try RelativePath("files/caf%C3%A9").encoded == "files/caf%C3%A9")
        #expect(try RelativePath("a/%F0%9F%9A%80").encoded == "a/%F0%9F%9A%80")
    }

    @Test func leadingSlashDotSegmentsAndTrailingSlash() throws {
        #expect(try RelativePath("/users/1").encoded == "users/1")
        #expect(try RelativePath("./users:batch").encoded == "users:batch")
        #expect(try RelativePath("v1/users:batch").encoded == "v1/users:batch")
        #expect(try RelativePath("users/").encoded == "users/")
        #expect(try RelativePath("").encoded == "")
        // A `.` after the start would address another resource (an interpolated id of "."):
        // refused, as `..` is; a leading `./` is kept for `./name:verb`.
        for path in ["a/./b", "a/.", "a/./", "a/%2e/b", "./a/./b"] {
            #expect(throws: CourierError.self) { try RelativePath(path) }
        }
        #expect(try RelativePath("./a/b").segments == ["a", "b"])
        #expect(try RelativePath("/./a").segments == ["a"])
        #expect(try RelativePath("...").segments == ["..."])
    }

    @Test func queryIsKeptAndEncoded() throws {
        let path = try RelativePath("search?q=a b&lang=fr%20FR&x=%zz")
        #expect(path.segments == ["search"])
        #expect(path.query == "q=a%20b&lang=fr%20FR&x=%25zz")
        #expect(path.encoded == "search?q=a%20b&lang=fr%20FR&x=%25zz")
    }
}

/// The byte-by-byte parse of ASCII paths against the character-by-character one.
@Suite struct RelativePathASCIITests {
    /// The characters that matter to the rules (separators, dots, escapes, scheme letters,
    /// forbidden bytes), plus a few plain ones.
    static let alphabet = Array("ab:./?%#\\ 2eE+-&=@!~\t\u{7F}") as [Character]

    @Test func asciiParseAgreesWithTheGeneralOne() async {
        let paths = Gen<Character?>.element(of: Self.alphabet).map { $0! }.string(of: 0...14)
        await propertyCheck(count: 2_000, input: paths) { path in
            #expect(
                Self.outcome { try RelativePath(path) } == Self.outcome { try RelativePath(parsingCharacters: path) })
        }
    }

    /// Paths made of whole segments, so dot segments, empty ones and schemes come up often.
    @Test func segmentPathsAgree() async {
        let tokens = ["a", "b:c", ".", "..", "", "%2e", "%2E%2e", "a%20b", "?q=1", "x y"]
        let paths = Gen<String?>.element(of: tokens).map { $0! }.array(of: 0...5).map { $0.joined(separator: "/") }
        await propertyCheck(count: 2_000, input: paths, Gen.bool) { path, leadingSlash in
            let path = (leadingSlash ? "/" : "") + path
            #expect(
                Self.outcome { try RelativePath(path) } == Self.outcome { try RelativePath(parsingCharacters: path) })
        }
    }

    @Test(arguments: [
        "", "/", "a", "/a/", "a//", "a/.", "./a:b", "a:b", "1a:b", "a/b:c", "?", "?a=%2", "a?b?c", "%2e", "%2E%2e/x",
        "a/%2f/b", "..a", "a/...", "//", "/.", "a/./", "x/%zz", "a\tb", "./", "././", "/./", "a/../",
    ])
    func examplesAgree(_ path: String) {
        #expect(Self.outcome { try RelativePath(path) } == Self.outcome { try RelativePath(parsingCharacters: path) })
    }

    /// The parsed parts, or the error message.
    static func outcome(_ parse: () throws -> RelativePath) -> String {
        do {
            let path = try parse()
            return "\(path.segments) \(path.query ?? "-") \(path.hasTrailingSlash) \(path.encoded)"
        } catch {
            return "error: \(error)"
        }
    }
}

@Suite struct BaseURLTests {
    @Test func joinsPrefixAndPath() throws {
        let base = try BaseURL("https://API.example.com/v1/")
        #expect(base.authority == "api.example.com")
        #expect(base.pathPrefix == "/v1")
        #expect(base.urlString(for: try RelativePath("users/42")) == "https://api.example.com/v1/users/42")
        #expect(base.target(for: try RelativePath("/users")) == "/v1/users")
        #expect(base.target(for: try RelativePath("")) == "/v1")
        #expect(base.target(for: try RelativePath("?a=1")) == "/v1?a=1")
        let root = try BaseURL("http://127.0.0.1:8080")
        #expect(root.target(for: try RelativePath("")) == "/")
        #expect(root.target(for: try RelativePath("echo")) == "/echo")
        #expect(root.description == "http://127.0.0.1:8080")
        let v6 = try BaseURL("http://[::1]:9000/api")
        #expect(v6.authority == "[::1]:9000")
    }

    @Test func convertsToAndFromFoundationURL() throws {
        let base = try BaseURL("https://API.example.com/v1/")
        #expect(base.url == URL(string: "https://api.example.com/v1"))
        #expect(try BaseURL(base.url) == base)
        let pool = try ServerPool(servers: [BaseURL(try #require(URL(string: "http://127.0.0.1:8080/api")))])
        #expect(pool.current.absoluteString == "http://127.0.0.1:8080/api")
        #expect(throws: CourierError.self) { try BaseURL(try #require(URL(string: "ftp://example.com"))) }
        #expect(throws: CourierError.self) { try BaseURL(try #require(URL(string: "https://example.com/?key=1"))) }
    }

    @Test func requestHeadCarriesTheParts() throws {
        let base = try BaseURL("https://api.example.com/v2")
        let head = base.request(.post, try RelativePath("users/a b"), headerFields: [.accept: "application/json"])
        #expect(head.method == .post)
        #expect(head.scheme == "https")
        #expect(head.authority == "api.example.com")
        #expect(head.path == "/v2/users/a%20b")
        #expect(head.headerFields[.accept] == "application/json")
    }

    @Test(arguments: [
        "ftp://example.com", "example.com", "https://", "https://user:pw@example.com", "https://example.com?x=1",
        "https://example.com/#a", "https://exa mple.com", "https://example.com/v1/../x", "file:///etc/passwd",
    ])
    func rejectsBadBaseURLs(_ text: String) {
        #expect(throws: CourierError.self) { try BaseURL(text) }
    }
}

import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The request head a service keeps for the last endpoint it called (`RequestHeadCache`).
@Suite struct RequestHeadCacheTests {
    private let server = try! BaseURL("https://api.example.com/v1")

    @Test func theSameEndpointGetsTheSameHead() throws {
        let cache = RequestHeadCache()
        let first = try cache.head(.get, "users/a b?q=1", on: server)
        let second = try cache.head(.get, "users/a b?q=1", on: server)
        #expect(first.path == "/v1/users/a%20b?q=1")
        #expect(second == first)
        #expect(first.headerFields.isEmpty)
    }

    /// `é` and `e` + U+0301 are equal `String`s but different bytes, so different targets.
    @Test func canonicallyEquivalentPathsAreNotTheSameEndpoint() throws {
        let cache = RequestHeadCache()
        let composed = try cache.head(.get, "caf\u{E9}", on: server)
        let decomposed = try cache.head(.get, "cafe\u{301}", on: server)
        #expect(composed.path == "/v1/caf%C3%A9")
        #expect(decomposed.path == "/v1/cafe%CC%81")
    }

    @Test func anotherMethodOrServerIsAnotherHead() throws {
        let cache = RequestHeadCache()
        _ = try cache.head(.get, "users/42", on: server)
        #expect(try cache.head(.delete, "users/42", on: server).method == .delete)
        let other = try cache.head(.delete, "users/42", on: try BaseURL("http://other.example:8080"))
        #expect(other.scheme == "http")
        #expect(other.authority == "other.example:8080")
        #expect(other.path == "/users/42")
    }

    @Test func anUnsafePathFailsEveryTime() throws {
        let cache = RequestHeadCache()
        _ = try cache.head(.get, "users/42", on: server)
        for _ in 0..<2 {
            #expect(throws: CourierError.self) { try cache.head(.get, "../admin", on: server) }
        }
        #expect(try cache.head(.get, "users/42", on: server).path == "/v1/users/42")
    }
}

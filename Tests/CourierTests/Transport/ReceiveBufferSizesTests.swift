import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct ReceiveBufferSizesTests {
    let api = ReceiveBufferSizes.Origin(authority: "api.example.com", isHTTPS: false)
    let cdn = ReceiveBufferSizes.Origin(authority: "cdn.example.com", isHTTPS: false)

    @Test func startsSmallAndGrowsToHoldTheBodiesOfAnOrigin() {
        var sizes = ReceiveBufferSizes()
        #expect(sizes.size(for: api) == 2048)
        sizes.record(api, bodyBytes: 972, size: 2048)
        #expect(sizes.size(for: api) == 2048)
        sizes.record(api, bodyBytes: 5_000, size: 2048)
        #expect(sizes.size(for: api) == 8192)
        sizes.record(cdn, bodyBytes: 10_000_000, size: 2048)
        #expect(sizes.size(for: cdn) == ReceiveBufferSizes.maximum)
        #expect(ReceiveBufferSizes.maximum == 128 << 10)
        // Origins are apart, and http is not https.
        #expect(sizes.size(for: .init(authority: "cdn.example.com", isHTTPS: true)) == 16 << 10)
        #expect(sizes.size(for: api) == 8192)
    }

    /// An https origin may answer in HTTP/2, whose answers libcurl 7.88 cannot end with a
    /// buffer smaller than a frame when they have no Content-Length: it starts, and shrinks
    /// back, at 16 KiB (`ContentDecodingHTTP2Tests.nginxGzipOverHTTP2IsDecodedWhole` is the
    /// end to end test).
    @Test func anHTTPSOriginStartsAndStaysAtAFrame() {
        var sizes = ReceiveBufferSizes()
        let secure = ReceiveBufferSizes.Origin(authority: "api.example.com", isHTTPS: true)
        #expect(sizes.size(for: secure) == 16 << 10)
        sizes.record(secure, bodyBytes: 1 << 20, size: 16 << 10)
        #expect(sizes.size(for: secure) == ReceiveBufferSizes.maximum)
        for _ in 0..<(16 * ReceiveBufferSizes.shrinkAfter) {
            sizes.record(secure, bodyBytes: 100, size: sizes.size(for: secure))
        }
        #expect(sizes.size(for: secure) == 16 << 10)
    }

    @Test func shrinksOneStepAfterManySmallBodiesInARow() {
        var sizes = ReceiveBufferSizes()
        let maximum = ReceiveBufferSizes.maximum
        sizes.record(cdn, bodyBytes: 1 << 20, size: 2048)
        for _ in 0..<(ReceiveBufferSizes.shrinkAfter - 1) { sizes.record(cdn, bodyBytes: 100, size: maximum) }
        #expect(sizes.size(for: cdn) == maximum)
        // A body that needs the buffer (more than a quarter of it) starts the count again.
        sizes.record(cdn, bodyBytes: Int64(maximum / 4 + 1), size: maximum)
        for _ in 0..<(ReceiveBufferSizes.shrinkAfter - 1) { sizes.record(cdn, bodyBytes: 100, size: maximum) }
        #expect(sizes.size(for: cdn) == maximum)
        sizes.record(cdn, bodyBytes: 100, size: maximum)
        #expect(sizes.size(for: cdn) == maximum / 2)
        // One step per `shrinkAfter` small bodies, down to the minimum and no further.
        for _ in 0..<(8 * ReceiveBufferSizes.shrinkAfter) { sizes.record(cdn, bodyBytes: 100, size: 8192) }
        #expect(sizes.size(for: cdn) == 2048)
    }

    @Test func remembersABoundedNumberOfOrigins() {
        var sizes = ReceiveBufferSizes()
        for index in 0...ReceiveBufferSizes.capacity {
            sizes.record(.init(authority: "host\(index)", isHTTPS: true), bodyBytes: 1 << 20, size: 2048)
        }
        let last = ReceiveBufferSizes.Origin(authority: "host\(ReceiveBufferSizes.capacity)", isHTTPS: true)
        #expect(sizes.size(for: last) == ReceiveBufferSizes.maximum)
    }

    /// Large bodies arrive whole and in order whatever the buffer: the first transfer to the
    /// origin reads 2 KiB at a time, the next ones 128 KiB.
    @Test func largeBodiesArriveIntactAtEverySize() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try HTTPClient()
        let size = 5_000_003
        let expected = TestServer.bytePattern(count: size)
        for _ in 0..<3 {
            let response = try await client.send(HTTPRequest(.get, server.url("/bytes/\(size)")))
            #expect(response.body.count == size)
            #expect(response.body == expected)
        }
        // Smaller bodies on the same origin, then a stream.
        let small = try await client.send(HTTPRequest(.get, server.url("/bytes/3000")))
        #expect(small.body == TestServer.bytePattern(count: 3000))
        let stream = try await client.stream(HTTPRequest(.get, server.url("/bytes/\(size)")))
        #expect(try await stream.body.collect() == expected)
    }
}

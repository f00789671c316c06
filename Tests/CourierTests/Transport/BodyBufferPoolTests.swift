import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite struct BodyBufferPoolTests {
    static let mebibyte = 1 << 20

    static func block(_ capacity: Int) -> UnsafeMutableRawPointer { malloc(capacity)! }

    @Test func sizeClassesAreQuarterStepsBetweenTheBounds() throws {
        #expect(BodyBufferPool.sizeClass(for: Self.mebibyte) == Self.mebibyte)
        #expect(BodyBufferPool.sizeClass(for: Self.mebibyte + 1) == Self.mebibyte + Self.mebibyte / 4)
        #expect(BodyBufferPool.sizeClass(for: 300_000) == 320 << 10)
        #expect(BodyBufferPool.sizeClass(for: BodyBufferPool.smallest) == BodyBufferPool.smallest)
        #expect(BodyBufferPool.sizeClass(for: BodyBufferPool.largest) == BodyBufferPool.largest)
        #expect(BodyBufferPool.sizeClass(for: BodyBufferPool.smallest - 1) == nil)
        #expect(BodyBufferPool.sizeClass(for: BodyBufferPool.largest + 1) == nil)
        // Never more than a fifth of the block is spare.
        for bytes in stride(from: BodyBufferPool.smallest, through: BodyBufferPool.largest, by: 4093) {
            let size = try #require(BodyBufferPool.sizeClass(for: bytes))
            #expect(size >= bytes && (size - bytes) * 5 <= size)
        }
    }

    @Test func aBlockGivenBackIsTakenForTheNextBodyOfItsClass() {
        let pool = BodyBufferPool()
        let block = Self.block(Self.mebibyte)
        pool.giveBack(block, capacity: Self.mebibyte)
        #expect(pool.idle.count == 1 && pool.idle.bytes == Self.mebibyte)
        #expect(pool.take(capacity: 2 * Self.mebibyte) == nil)
        #expect(pool.take(capacity: Self.mebibyte) == block)
        #expect(pool.idle.count == 0 && pool.idle.bytes == 0)
        #expect(pool.take(capacity: Self.mebibyte) == nil)
        free(block)
    }

    @Test func blocksOfOtherSizesAreFreedNotKept() {
        let pool = BodyBufferPool()
        pool.giveBack(Self.block(Self.mebibyte + 1), capacity: Self.mebibyte + 1)
        pool.giveBack(Self.block(4096), capacity: 4096)
        pool.giveBack(Self.block(8 * Self.mebibyte), capacity: 8 * Self.mebibyte)
        #expect(pool.idle.count == 0)
    }

    @Test func theIdleBytesStayUnderTheCap() {
        let pool = BodyBufferPool()
        let blocks = BodyBufferPool.maxIdleBytes / Self.mebibyte + 3
        for _ in 0..<blocks { pool.giveBack(Self.block(Self.mebibyte), capacity: Self.mebibyte) }
        #expect(pool.idle.bytes == BodyBufferPool.maxIdleBytes)
        #expect(pool.idle.count == BodyBufferPool.maxIdleBytes / Self.mebibyte)
    }

    @Test func blocksIdleForTheirLifetimeAreFreedByTrim() {
        let pool = BodyBufferPool()
        let start = ContinuousClock.now
        for _ in 0..<3 { pool.giveBack(Self.block(Self.mebibyte), capacity: Self.mebibyte) }
        pool.trim(now: start)
        #expect(pool.idle.count == 3)
        pool.trim(now: .now + BodyBufferPool.idleLifetime)
        #expect(pool.idle.count == 0 && pool.idle.bytes == 0)
    }

    @Test func aClosedPoolFreesWhatItHoldsAndWhatComesBack() {
        let pool = BodyBufferPool()
        pool.giveBack(Self.block(Self.mebibyte), capacity: Self.mebibyte)
        pool.close()
        #expect(pool.idle.count == 0)
        pool.giveBack(Self.block(Self.mebibyte), capacity: Self.mebibyte)
        #expect(pool.idle.count == 0)
    }

    @Test func aResponseBufferReservesFromThePoolAndItsDataGivesTheBlockBack() {
        let pool = BodyBufferPool()
        let content = Data((0..<Self.mebibyte).map { UInt8(truncatingIfNeeded: $0 % 251) })
        func fill() -> Data {
            var buffer = ResponseBuffer()
            buffer.pool = pool
            buffer.reserve(content.count)
            let appended = content.withUnsafeBytes { buffer.append($0.baseAddress!, length: $0.count) }
            #expect(appended)
            return buffer.take()
        }
        var first: Data? = fill()
        #expect(first == content)
        let address = first!.withUnsafeBytes { $0.baseAddress }
        #expect(pool.idle.count == 0)
        first = nil
        #expect(pool.idle.count == 1)
        let second = fill()
        #expect(second == content)
        #expect(second.withUnsafeBytes { $0.baseAddress } == address)
        #expect(pool.idle.count == 0)
    }

    @Test func aResponseBufferNeverTakenGivesItsBlockBack() {
        let pool = BodyBufferPool()
        do {
            var buffer = ResponseBuffer()
            buffer.pool = pool
            buffer.reserve(Self.mebibyte)
            _ = buffer.append([1, 2, 3], length: 3)
        }
        #expect(pool.idle.count == 1)
    }

    /// Through a transport: a 1 MB body's block goes back to the transport's pool when its
    /// `Data` is dropped, and the next 1 MB body is read into it.
    @Test func largeBodiesOfATransportReuseTheirBlocks() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        let size = Self.mebibyte
        let expected = TestServer.bytePattern(count: size)
        let request = TransportRequest(head: HTTPRequest(.get, server.url("/bytes/\(size)")))
        /// The address of the body's bytes; the body is gone when it returns.
        func fetch() async throws -> UInt {
            let response = try await transport.execute(request)
            #expect(response.body == expected)
            #expect(transport.bodyBuffers.idle.count == 0)
            return response.body.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        }
        let address = try await fetch()
        #expect(transport.bodyBuffers.idle.count == 1)
        let second = try await transport.execute(request)
        #expect(second.body == expected)
        #expect(second.body.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } == address)
        #expect(transport.bodyBuffers.idle.count == 0)
    }
}

@Suite struct StreamBufferGatheringTests {
    static func piece(_ count: Int, from start: Int) -> Data {
        Data((start..<(start + count)).map { UInt8(truncatingIfNeeded: $0 % 251) })
    }

    /// Full 16 KiB pieces that come while no reader waits are one chunk, in one pooled block,
    /// which goes back to the pool when the reader drops it.
    @Test func piecesThatComeWhileTheReaderIsBusyAreOneChunk() async throws {
        let pool = BodyBufferPool()
        let stream = StreamBuffer(blocks: pool) { _ in }
        var sent = Data()
        for index in 0..<4 {
            let piece = Self.piece(StreamBuffer.fullPiece, from: sent.count)
            #expect(piece.withUnsafeBytes { stream.offer($0) } == .taken(flush: false), "piece \(index)")
            sent.append(piece)
        }
        stream.finish(nil)
        var chunk = try await stream.next()
        #expect(chunk == sent)
        #expect(try await stream.next() == nil)
        #expect(pool.idle.count == 0)
        chunk = nil
        #expect(pool.idle.count == 1 && pool.idle.bytes == StreamBuffer.chunkBlock)
    }

    /// A small piece with no block open is a chunk of its own: a trickling stream holds no block.
    @Test func aSmallPieceIsAChunkOfItsOwn() async throws {
        let pool = BodyBufferPool()
        let stream = StreamBuffer(blocks: pool) { _ in }
        let small = Self.piece(1000, from: 0)
        let large = Self.piece(StreamBuffer.fullPiece, from: 1000)
        #expect(small.withUnsafeBytes { stream.offer($0) } == .taken(flush: false))
        #expect(large.withUnsafeBytes { stream.offer($0) } == .taken(flush: false))
        stream.finish(nil)
        #expect(try await stream.next() == small)
        #expect(try await stream.next() == large)
        #expect(try await stream.next() == nil)
    }

    /// The high-water mark counts the bytes gathered in the open block.
    @Test func theOpenBlockCountsTowardsTheHighWaterMark() async throws {
        let resumed = LockedValue(0)
        let stream = StreamBuffer(highWaterMark: 2 * StreamBuffer.fullPiece) { control in
            if case .resume = control { resumed.withLock { $0 += 1 } }
        }
        let piece = Self.piece(StreamBuffer.fullPiece, from: 0)
        #expect(piece.withUnsafeBytes { stream.offer($0) } == .taken(flush: false))
        #expect(piece.withUnsafeBytes { stream.offer($0) } == .taken(flush: false))
        #expect(piece.withUnsafeBytes { stream.offer($0) } == .full)
        #expect(try await stream.next()?.count == 2 * StreamBuffer.fullPiece)
        #expect(resumed.withLock { $0 } == 1)
    }
}

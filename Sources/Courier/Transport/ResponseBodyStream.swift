import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A response body arriving in chunks, as an `AsyncSequence` of `Data`.
///
/// Back-pressure: when the consumer falls behind by more than `highWaterMark` bytes, the
/// transfer pauses (nothing more is read from the socket) until the consumer catches up.
/// Iterate it once. Dropping the sequence and its iterators before the end, or cancelling
/// the task that iterates, aborts the transfer.
public struct ResponseBodyStream: AsyncSequence, Sendable {
    /// The body's bytes in arrival order, in chunks of up to 256 KiB: bytes that come while
    /// the reader is busy are gathered into one chunk.
    public typealias Element = Data

    private let consumer: Consumer

    init(buffer: StreamBuffer, keepAlive: (any Sendable)?) {
        consumer = Consumer(buffer: buffer, keepAlive: keepAlive)
    }

    /// The one iterator of this body; iterate the stream once.
    public func makeAsyncIterator() -> Iterator { Iterator(consumer: consumer) }

    /// The same stream, calling `ended` once when the body ends: with the bytes read when the
    /// iterator reached the end, with the error when it threw, or with `CancellationError` when
    /// the stream was dropped before its end.
    func observed(_ ended: @escaping @Sendable (Result<Int64, any Error>) -> Void) -> ResponseBodyStream {
        consumer.observer.withLock { $0 = BodyObserver(ended: ended) }
        return self
    }

    /// Reads the rest of the body into one `Data`.
    /// - Throws: what the transfer failed with.
    public func collect() async throws -> Data {
        var data = Data()
        for try await chunk in self { data.append(chunk) }
        return data
    }

    /// Yields the chunks in arrival order.
    public struct Iterator: AsyncIteratorProtocol {
        fileprivate let consumer: Consumer

        /// The next chunk, or nil at the end of the body.
        /// - Throws: what the transfer failed with, or `CancellationError` when the task is cancelled.
        public mutating func next() async throws -> Data? {
            let buffer = consumer.buffer
            guard consumer.isObserved else {
                return try await withTaskCancellationHandler {
                    try await buffer.next()
                } onCancel: {
                    buffer.abort()
                }
            }
            do {
                let chunk = try await withTaskCancellationHandler {
                    try await buffer.next()
                } onCancel: {
                    buffer.abort()
                }
                consumer.observe(chunk)
                return chunk
            } catch {
                consumer.end(.failure(error))
                throw error
            }
        }
    }

    /// Aborts the transfer when the last reference to the stream goes away unread.
    fileprivate final class Consumer: Sendable {
        let buffer: StreamBuffer
        /// Keeps the transport (and its thread) alive while the body is read.
        let keepAlive: (any Sendable)?
        /// Who learns how the body ended (the call's telemetry); nil once told, or when none.
        let observer = LockedValue<BodyObserver?>(nil)

        init(buffer: StreamBuffer, keepAlive: (any Sendable)?) {
            self.buffer = buffer
            self.keepAlive = keepAlive
        }

        var isObserved: Bool { observer.withLock { $0 != nil } }

        /// Counts a chunk, or reports the end at nil.
        func observe(_ chunk: Data?) {
            guard let chunk else {
                takeObserver().map { $0.ended(.success($0.bytes)) }
                return
            }
            observer.withLock { $0?.bytes += Int64(chunk.count) }
        }

        /// Reports the end once.
        func end(_ result: Result<Int64, any Error>) { takeObserver()?.ended(result) }

        /// The observer, removed so that the end is reported once.
        private func takeObserver() -> BodyObserver? {
            observer.withLock { observer in
                defer { observer = nil }
                return observer
            }
        }

        deinit {
            buffer.abort()
            end(.failure(CancellationError()))
        }
    }
}

/// The end callback of an observed body, and the bytes read so far.
struct BodyObserver: Sendable {
    let ended: @Sendable (Result<Int64, any Error>) -> Void
    var bytes: Int64 = 0
}

/// The chunks between the curl thread (producer) and the stream's iterator (consumer).
///
/// libcurl hands a body to the write callback in pieces of at most 16 KiB
/// (`CURL_MAX_WRITE_SIZE`), however much one read brought. Bytes that come while the reader is
/// busy or within one pass of the loop are gathered into one block (`chunkBlock` bytes, from
/// the transport's `BodyBufferPool`), and a waiting reader is resumed once per pass
/// (`flush()`), not once per piece: a 100 MB download is about 400 chunks, not 6,400, each one
/// `Data`, one hand-over and one write to the file. Nothing waits for a block to fill: the
/// reader takes what has come whenever it asks, and the loop flushes at the end of every pass,
/// so a trickling body reaches the reader as it comes. A piece under 16 KiB that finds no
/// block open is a chunk of its own (small streams never hold a block).
final class StreamBuffer: Sendable {
    /// What the consumer side asks of the transfer.
    enum Control {
        case resume
        case cancel
    }

    /// What `offer` did with the bytes.
    enum Offer: Equatable {
        /// Taken; `flush` is true when the loop must call `flush()` after its pass (once per pass).
        case taken(flush: Bool)
        /// The consumer is behind: the bytes were not taken, pause the transfer.
        case full
    }

    /// The block gathering bytes not yet cut into a chunk, by address (a raw pointer cannot
    /// cross into the lock's region).
    private struct Block {
        var address: UInt
        var count: Int

        var pointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: address)! }
    }

    private struct State {
        var chunks: [Data] = []
        var head = 0
        /// Bytes in `chunks` from `head` on, and in `gathering`.
        var bufferedBytes = 0
        var gathering: Block?
        var paused = false
        var flushQueued = false
        var end: Result<Void, any Error>?
        var waiter: CheckedContinuation<Data?, any Error>?
    }

    /// The size of a gathering block: the most one read of a stream brings (`ReceiveBufferSizes.streaming`).
    static let chunkBlock = ReceiveBufferSizes.streaming
    /// libcurl's `CURL_MAX_WRITE_SIZE`: a piece this large is part of a larger read.
    static let fullPiece = 16 << 10

    let highWaterMark: Int
    private let state = LockedValue(State())
    private let control: @Sendable (Control) -> Void
    /// Where blocks come from and go back to (nil: malloc and free).
    private let blocks: BodyBufferPool?

    init(
        highWaterMark: Int = 1 << 20, blocks: BodyBufferPool? = nil, control: @escaping @Sendable (Control) -> Void
    ) {
        self.highWaterMark = highWaterMark
        self.blocks = blocks
        self.control = control
    }

    deinit {
        let gathering = state.withLock { state in
            defer { state.gathering = nil }
            return state.gathering
        }
        if let gathering { release(gathering.pointer) }
    }

    // MARK: Producer (curl thread)

    /// Offers bytes from the write callback.
    /// - Parameter force: take the bytes even when the reader is behind (see `pausesWhenFull()`).
    func offer(_ bytes: UnsafeRawBufferPointer, force: Bool = false) -> Offer {
        let size = Self.chunkBlock
        return state.withLock { state -> Offer in
            if state.end != nil { return .taken(flush: false) }
            if !force, state.bufferedBytes >= highWaterMark {
                state.paused = true
                return .full
            }
            if var gathering = state.gathering, gathering.count + bytes.count <= size {
                (gathering.pointer + gathering.count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                gathering.count += bytes.count
                state.gathering = gathering
            } else {
                cutOpenBlock(&state)
                if bytes.count >= Self.fullPiece, bytes.count <= size, let block = allocate() {
                    block.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                    state.gathering = Block(address: UInt(bitPattern: block), count: bytes.count)
                } else {
                    state.chunks.append(Data(bytes))
                }
            }
            state.bufferedBytes += bytes.count
            guard state.waiter != nil, !state.flushQueued else { return .taken(flush: false) }
            state.flushQueued = true
            return .taken(flush: true)
        }
    }

    /// Whether the reader is behind; marks the transfer paused then, as a full `offer` does.
    ///
    /// For a decoded body, asked before each read off the wire: the decoder cannot give back
    /// bytes it has inflated, so it hands all that one read inflates to `offer(_:force:)`. The
    /// buffer then holds at most that much past `highWaterMark` (bounded by the response-size
    /// cap, which counts decoded bytes; libcurl kept up to 64 MB of decoded bytes for a paused
    /// transfer).
    func pausesWhenFull() -> Bool {
        state.withLock { state in
            guard state.end == nil, state.bufferedBytes >= highWaterMark else { return false }
            state.paused = true
            return true
        }
    }

    /// Hands what has come to a waiting reader; the loop calls it after a pass in which
    /// `offer` asked for it.
    func flush() {
        let (waiter, chunk, resumeTransfer) = state.withLock {
            state -> (CheckedContinuation<Data?, any Error>?, Data?, Bool) in
            state.flushQueued = false
            guard let waiter = state.waiter, let taken = takeChunk(&state) else { return (nil, nil, false) }
            state.waiter = nil
            return (waiter, taken.chunk, taken.resume)
        }
        if resumeTransfer { control(.resume) }
        waiter?.resume(returning: chunk)
    }

    /// Ends the stream: `nil` for a complete body, or the failure. A waiting reader gets what
    /// has come first.
    func finish(_ error: (any Error)?) {
        let (waiter, chunk) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, Data?) in
            guard state.end == nil else { return (nil, nil) }
            state.end = error.map { .failure($0) } ?? .success(())
            guard let waiter = state.waiter else { return (nil, nil) }
            state.waiter = nil
            return (waiter, takeChunk(&state)?.chunk)
        }
        guard let waiter else { return }
        if let chunk {
            waiter.resume(returning: chunk)
        } else if let error {
            waiter.resume(throwing: error)
        } else {
            waiter.resume(returning: nil)
        }
    }

    // MARK: Consumer

    func next() async throws -> Data? {
        defer { ThreadSanitizer.continuationReturned() }
        return try await withCheckedThrowingContinuation { continuation in
            enum Action {
                case give(Data?, resumeTransfer: Bool)
                case fail(any Error)
                case wait
            }
            let action = state.withLock { state -> Action in
                if let taken = takeChunk(&state) { return .give(taken.chunk, resumeTransfer: taken.resume) }
                switch state.end {
                case .success: return .give(nil, resumeTransfer: false)
                case .failure(let error): return .fail(error)
                case nil:
                    state.waiter = continuation
                    return .wait
                }
            }
            switch action {
            case .give(let chunk, let resumeTransfer):
                if resumeTransfer { control(.resume) }
                continuation.resume(returning: chunk)
            case .fail(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }
    }

    /// The consumer is gone or cancelled: abort the transfer if it is still running.
    func abort() {
        let running = state.withLock { state -> Bool in state.end == nil }
        guard running else { return }
        control(.cancel)
        finish(CancellationError())
    }

    // MARK: Chunks and blocks

    /// The oldest chunk, the open block cut into one when no other is queued; and whether a
    /// paused transfer may go on (at half the mark, so a pause is not undone for every chunk).
    private func takeChunk(_ state: inout State) -> (chunk: Data, resume: Bool)? {
        if state.head == state.chunks.count { cutOpenBlock(&state) }
        guard state.head < state.chunks.count else { return nil }
        let chunk = state.chunks[state.head]
        // Not kept until the queue drains: the reader owns the chunk now.
        state.chunks[state.head] = Data()
        state.head += 1
        state.bufferedBytes -= chunk.count
        if state.head == state.chunks.count {
            state.chunks.removeAll(keepingCapacity: true)
            state.head = 0
        }
        let resume = state.paused && state.bufferedBytes <= highWaterMark / 2
        if resume { state.paused = false }
        return (chunk, resume)
    }

    /// Queues the open block, if any, as a chunk that gives the block back when dropped.
    private func cutOpenBlock(_ state: inout State) {
        guard let gathering = state.gathering else { return }
        state.gathering = nil
        let blocks = self.blocks
        state.chunks.append(
            Data(
                bytesNoCopy: gathering.pointer, count: gathering.count,
                deallocator: .custom { block, _ in Self.release(block, to: blocks) }))
    }

    private func allocate() -> UnsafeMutableRawPointer? {
        blocks?.take(capacity: Self.chunkBlock) ?? malloc(Self.chunkBlock)
    }

    private func release(_ block: UnsafeMutableRawPointer) { Self.release(block, to: blocks) }

    /// Gives a block back to `blocks`, or frees it without a pool (also from a chunk's
    /// deallocator, which may run after the stream is gone).
    private static func release(_ block: UnsafeMutableRawPointer, to blocks: BodyBufferPool?) {
        if let blocks { blocks.giveBack(block, capacity: chunkBlock) } else { free(block) }
    }
}

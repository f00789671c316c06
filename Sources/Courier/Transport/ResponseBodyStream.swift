import Foundation
import Synchronization

/// A response body arriving in chunks, as an `AsyncSequence` of `Data`.
///
/// Back-pressure: when the consumer falls behind by more than `highWaterMark` bytes, the
/// transfer pauses (nothing more is read from the socket) until the consumer catches up.
/// Iterate it once. Dropping the sequence and its iterators before the end, or cancelling
/// the task that iterates, aborts the transfer.
public struct ResponseBodyStream: AsyncSequence, Sendable {
    /// Each chunk as it arrived from the transfer.
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
final class StreamBuffer: Sendable {
    /// What the consumer side asks of the transfer.
    enum Control {
        case resume
        case cancel
    }

    private struct State {
        var chunks: [Data] = []
        var head = 0
        var bufferedBytes = 0
        var paused = false
        var end: Result<Void, any Error>?
        var waiter: CheckedContinuation<Data?, any Error>?
    }

    let highWaterMark: Int
    private let state = LockedValue(State())
    private let control: @Sendable (Control) -> Void

    init(highWaterMark: Int = 1 << 20, control: @escaping @Sendable (Control) -> Void) {
        self.highWaterMark = highWaterMark
        self.control = control
    }

    // MARK: Producer (curl thread)

    /// Offers bytes from the write callback.
    /// - Returns: false when the consumer is behind: the bytes were not taken, pause the transfer.
    func offer(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let chunk = Data(bytes)
        let (accepted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Data?, any Error>?) in
            if state.end != nil { return (true, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (true, waiter)
            }
            if state.bufferedBytes >= highWaterMark {
                state.paused = true
                return (false, nil)
            }
            state.chunks.append(chunk)
            state.bufferedBytes += chunk.count
            return (true, nil)
        }
        waiter?.resume(returning: chunk)
        return accepted
    }

    /// Ends the stream: `nil` for a complete body, or the failure.
    func finish(_ error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Data?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = error.map { .failure($0) } ?? .success(())
            defer { state.waiter = nil }
            return state.waiter
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: nil) }
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
                if state.head < state.chunks.count {
                    let chunk = state.chunks[state.head]
                    state.head += 1
                    state.bufferedBytes -= chunk.count
                    if state.head == state.chunks.count {
                        state.chunks.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    // Resume at half the mark, so a pause is not undone for every chunk read.
                    let resume = state.paused && state.bufferedBytes <= highWaterMark / 2
                    if resume { state.paused = false }
                    return .give(chunk, resumeTransfer: resume)
                }
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
}

import Foundation

/// The `AsyncSequence` behind a `.stream(_:length:)` body, and the bounded buffer between the
/// task that pulls it and curl's read callback.
///
/// Back-pressure both ways: the pulling task waits while `highWaterMark` bytes are buffered,
/// and the read callback pauses the transfer (`CURL_READFUNC_PAUSE`) while the buffer is
/// empty; the next chunk wakes it (`CurlLoop`'s `.resume`, i.e. `curl_easy_pause`).
/// The sequence is pulled once: a second `start` (a retry, a redirect that resends the body)
/// fails with a clear error instead of sending a different body.
final class BodyStreamSource: Sendable {
    /// The body's length when the caller gave it (`Content-Length`); `nil`: sent chunked.
    let length: Int64?
    /// This body in a `RequestIdentity`: a number no other streamed body of the process has
    /// had (its address is given to a later one once it is released).
    let identityNumber = IdentityNumber.next()
    let highWaterMark: Int
    /// The loop that pulls the sequence; taken (set to nil) by the first `start`.
    private let pump: LockedValue<(@Sendable (BodyStreamSource) async throws -> Void)?>
    private let state = LockedValue(State())

    private struct State {
        var chunks: [Data] = []
        var head = 0
        /// Bytes of `chunks[head]` already read.
        var offset = 0
        var bufferedBytes = 0
        /// Bytes handed to the reader so far.
        var delivered: Int64 = 0
        /// Set when the sequence ended (nil error) or failed.
        var end: Result<Void, CourierError>?
        /// The read callback found the buffer empty and paused the transfer.
        var readerPaused = false
        var wake: (@Sendable () -> Void)?
        var producer: CheckedContinuation<Void, any Error>?
        var task: Task<Void, Never>?
        var cancelled = false
    }

    init<S: AsyncSequence & Sendable>(_ chunks: S, length: Int64?, highWaterMark: Int = 1 << 20)
    where S.Element == Data {
        self.length = length
        self.highWaterMark = highWaterMark
        pump = LockedValue({ source in
            for try await chunk in chunks { try await source.push(chunk) }
        })
    }

    /// The message of the error a second `start` throws (`CourierError.isStreamedBodyResent`).
    static let sentOnce =
        "a streamed request body (RequestBody.stream) can be sent only once, and a retry or "
        + "redirect would send it again; use a file or data body for that"

    // MARK: Curl thread

    /// Starts pulling the sequence; `wake` is called (from any thread) when a paused read can go on.
    /// - Throws: `CourierError.invalidRequest` when the body was sent before.
    func start(wake: @escaping @Sendable () -> Void) throws(CourierError) {
        guard
            let body = pump.withLock({ pump in
                defer { pump = nil }; return pump
            })
        else {
            throw CourierError(.invalidRequest, Self.sentOnce)
        }
        state.withLock { $0.wake = wake }
        let task = Task { [self] in
            do {
                try await body(self)
                end(nil)
            } catch {
                end(error)
            }
        }
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// Copies up to `capacity` buffered bytes into `destination`.
    /// - Returns: the count copied, 0 at the end of the sequence, nil when nothing is buffered
    ///   yet (pause the transfer; `wake` is called when there is).
    /// - Throws: `CourierError` when the sequence failed.
    ///
    /// With a declared length, the sequence must have exactly that many bytes: more fails the
    /// read (the server would otherwise get a body cut short and report success), and the
    /// last byte is held back until the sequence has ended, so a sequence that goes on past
    /// it is caught before the body is complete, as AsyncHTTPClient does.
    func read(into destination: UnsafeMutableRawPointer, capacity: Int) throws(CourierError) -> Int? {
        let length = self.length
        let (result, producer) = state.withLock {
            state -> (Result<Int?, CourierError>, CheckedContinuation<Void, any Error>?) in
            var capacity = capacity
            if let length {
                let remaining = length - state.delivered
                if Int64(state.bufferedBytes) > remaining {
                    return (.failure(Self.longerThanDeclared(length)), nil)
                }
                // The last byte waits for the end of the sequence.
                if state.end == nil { capacity = Int(Swift.min(Int64(capacity), Swift.max(0, remaining - 1))) }
            }
            var copied = 0
            while copied < capacity, state.head < state.chunks.count {
                let chunk = state.chunks[state.head]
                let count = Swift.min(chunk.count - state.offset, capacity - copied)
                chunk.withUnsafeBytes { bytes in
                    (destination + copied).copyMemory(from: bytes.baseAddress! + state.offset, byteCount: count)
                }
                copied += count
                state.offset += count
                if state.offset == chunk.count {
                    state.head += 1
                    state.offset = 0
                }
            }
            if state.head == state.chunks.count {
                state.chunks.removeAll(keepingCapacity: true)
                state.head = 0
            }
            state.bufferedBytes -= copied
            state.delivered += Int64(copied)
            // Let the producer go on at half the mark, not for every chunk read.
            var producer: CheckedContinuation<Void, any Error>?
            if state.bufferedBytes <= highWaterMark / 2 {
                producer = state.producer
                state.producer = nil
            }
            if copied > 0 { return (.success(copied), producer) }
            switch state.end {
            case .success: return (.success(0), producer)
            case .failure(let error): return (.failure(error), producer)
            case nil:
                state.readerPaused = true
                return (.success(nil), producer)
            }
        }
        producer?.resume()
        return try result.get()
    }

    private static func longerThanDeclared(_ length: Int64) -> CourierError {
        CourierError(
            .invalidRequest, "the streamed request body has more bytes than its declared length (\(length))")
    }

    /// The transfer ended: stops pulling the sequence and drops what is buffered.
    func cancel() {
        let (producer, task) = state.withLock { state in
            state.cancelled = true
            state.chunks.removeAll()
            state.bufferedBytes = 0
            state.wake = nil
            defer {
                state.producer = nil
                state.task = nil
            }
            return (state.producer, state.task)
        }
        producer?.resume(throwing: CancellationError())
        task?.cancel()
    }

    // MARK: Pulling task

    /// Buffers a chunk; waits while the buffer is above the high-water mark.
    private func push(_ chunk: Data) async throws {
        guard !chunk.isEmpty else { return }
        let (wake, full) = try state.withLock { state throws(CancellationError) -> ((@Sendable () -> Void)?, Bool) in
            guard !state.cancelled else { throw CancellationError() }
            state.chunks.append(chunk)
            state.bufferedBytes += chunk.count
            return (takeWake(&state), state.bufferedBytes >= highWaterMark)
        }
        wake?()
        guard full else { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enum Action { case wait, go, stop }
            let action = state.withLock { state -> Action in
                if state.cancelled { return .stop }
                guard state.bufferedBytes >= highWaterMark else { return .go }
                state.producer = continuation
                return .wait
            }
            switch action {
            case .wait: break
            case .go: continuation.resume()
            case .stop: continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// The sequence ended or failed.
    private func end(_ error: (any Error)?) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.end == nil else { return nil }
            if let error {
                state.end = .failure(
                    error as? CourierError
                        ?? CourierError(
                            .invalidRequest, "the request body's sequence failed: \(error)",
                            underlying: error))
            } else {
                state.end = .success(())
            }
            return takeWake(&state)
        }
        wake?()
    }

    /// The wake-up to call when the reader is paused (once per pause).
    private func takeWake(_ state: inout State) -> (@Sendable () -> Void)? {
        guard state.readerPaused else { return nil }
        state.readerPaused = false
        return state.wake
    }
}

extension CourierError {
    /// Whether this is the error of a streamed body a retry or a redirect would send again.
    var isStreamedBodyResent: Bool { code == .invalidRequest && message.hasPrefix(BodyStreamSource.sentOnce) }

    /// This error (a streamed body sent again) naming what asked for the resend: the failure of
    /// the previous attempt, kept as the underlying error.
    func resent(after cause: CourierError) -> CourierError {
        var error = self
        let what = cause.status.map { "HTTP \($0.code)" } ?? "CourierError.\(cause.code)"
        error.message += "; it was to be sent again after the previous attempt failed with \(what)"
        error.underlying = cause
        return error
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Feeds a `RequestBody` to curl's read callback, segment by segment, never loading a file
/// whole. Supports rewinding (curl's seek callback) for a resend on a fresh connection, except
/// for a body with a `.stream` segment, which can be read once.
///
/// Used on the transport's thread only.
final class BodyReader {
    private let segments: [RequestBody.Segment]
    /// Bytes the whole body must have; reading stops there even if a file grew. `nil`: unknown
    /// (a streamed body sent chunked), the body ends where its segments end.
    private let length: Int64?
    /// The size of each file segment, in order, when `length` was measured: no more is read
    /// of a file that grew since (its bytes would push the segments after it past `length`,
    /// cutting a multipart body's last parts and closing boundary), and one that ends before
    /// fails. `nil`: each file is read to its end.
    private let fileSizes: [Int64]?
    /// Called from any thread when a paused read can go on (a `.stream` segment got bytes).
    private let wake: @Sendable () -> Void
    /// The streamed segments started so far, stopped when the reader goes away.
    private var startedStreams: [BodyStreamSource] = []
    private var index = 0
    /// The number of file segments before `index`.
    private var fileOrdinal = 0
    private var offsetInSegment: Int64 = 0
    /// Body bytes handed to curl so far.
    private(set) var position: Int64 = 0
    private var descriptor: Int32 = -1

    init(body: RequestBody, length: Int64?, fileSizes: [Int64]? = nil, wake: @escaping @Sendable () -> Void) {
        segments = body.segments
        self.length = length
        self.fileSizes = fileSizes
        self.wake = wake
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        for source in startedStreams { source.cancel() }
    }

    /// Copies up to `capacity` bytes into `destination`.
    /// - Returns: the number of bytes copied, 0 at the end of the body, nil when a streamed
    ///   segment has no bytes yet (pause the transfer until `wake` is called).
    /// - Throws: `CourierError.invalidRequest` when a file cannot be read or ends early, or a
    ///   streamed segment fails or was sent before.
    func read(into destination: UnsafeMutableRawPointer, capacity: Int) throws(CourierError) -> Int? {
        let wanted = Int(Swift.min(Int64(capacity), (length ?? .max) - position))
        guard wanted > 0 else { return 0 }
        while index < segments.count {
            switch segments[index] {
            case .data(let data):
                let available = data.count - Int(offsetInSegment)
                if available <= 0 {
                    nextSegment()
                    continue
                }
                let count = Swift.min(available, wanted)
                data.withUnsafeBytes { bytes in
                    let start = bytes.baseAddress! + Int(offsetInSegment)
                    destination.copyMemory(from: start, byteCount: count)
                }
                advance(by: count)
                return count
            case .file(let path):
                let size = fileSize(ordinal: fileOrdinal)
                var wanted = wanted
                if let size {
                    guard offsetInSegment < size else {
                        nextSegment()
                        continue
                    }
                    wanted = Int(Swift.min(Int64(wanted), size - offsetInSegment))
                }
                if descriptor < 0 {
                    descriptor = open(path, O_RDONLY | O_CLOEXEC)
                    guard descriptor >= 0 else {
                        throw CourierError(.invalidRequest, "cannot open the body file at \(path)")
                    }
                    if offsetInSegment > 0, lseek(descriptor, off_t(offsetInSegment), SEEK_SET) < 0 {
                        throw CourierError(.invalidRequest, "cannot seek in the body file at \(path)")
                    }
                }
                let count = posixRead(descriptor, destination, wanted)
                if count < 0 {
                    throw CourierError(.invalidRequest, "cannot read the body file at \(path)")
                }
                if count == 0 {
                    if let size, offsetInSegment < size {
                        throw CourierError(
                            .invalidRequest, "the body file at \(path) became shorter while the request was sent")
                    }
                    nextSegment()
                    continue
                }
                advance(by: count)
                return count
            case .stream(let source):
                if offsetInSegment == 0, !startedStreams.contains(where: { $0 === source }) {
                    try source.start(wake: wake)
                    startedStreams.append(source)
                }
                guard let count = try source.read(into: destination, capacity: wanted) else { return nil }
                if count == 0 {
                    nextSegment()
                    continue
                }
                advance(by: count)
                return count
            }
        }
        guard length == nil else {
            throw CourierError(.invalidRequest, "the request body ended before its announced length")
        }
        return 0
    }

    /// Moves to `offset` bytes from the start of the body.
    /// - Returns: false when the offset lies outside the body.
    func seek(to offset: Int64) -> Bool {
        guard offset >= 0, offset <= length ?? .max else { return false }
        // A streamed segment is read once: it can only "seek" to where it is.
        if segments.contains(where: { if case .stream = $0 { true } else { false } }) { return offset == position }
        closeFile()
        index = 0
        fileOrdinal = 0
        offsetInSegment = 0
        position = 0
        var remaining = offset
        while index < segments.count {
            let size: Int64
            switch segments[index] {
            case .data(let data): size = Int64(data.count)
            case .file(let path):
                if let measured = fileSize(ordinal: fileOrdinal) {
                    size = measured
                } else {
                    var info = stat()
                    guard stat(path, &info) == 0 else { return false }
                    size = Int64(info.st_size)
                }
            case .stream:
                return false  // unreachable: checked above
            }
            if remaining < size || (remaining == 0) {
                offsetInSegment = remaining
                position = offset
                return true
            }
            remaining -= size
            if case .file = segments[index] { fileOrdinal += 1 }
            index += 1
        }
        position = offset
        return remaining == 0
    }

    private func advance(by count: Int) {
        offsetInSegment += Int64(count)
        position += Int64(count)
    }

    /// The measured size of the file segment `ordinal` (nil: not measured).
    private func fileSize(ordinal: Int) -> Int64? {
        guard let fileSizes, ordinal < fileSizes.count else { return nil }
        return fileSizes[ordinal]
    }

    private func nextSegment() {
        closeFile()
        if case .file = segments[index] { fileOrdinal += 1 }
        index += 1
        offsetInSegment = 0
    }

    private func closeFile() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }
}

/// `read(2)`, named apart from `BodyReader.read`.
private func posixRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

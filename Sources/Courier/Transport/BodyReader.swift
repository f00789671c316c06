import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Feeds a `RequestBody` to curl's read callback, segment by segment, never loading a file
/// whole. Supports rewinding (curl's seek callback) for a resend on a fresh connection.
///
/// Used on the transport's thread only.
final class BodyReader {
    private let segments: [RequestBody.Segment]
    /// Bytes the whole body must have; reading stops there even if a file grew.
    private let length: Int64
    private var index = 0
    private var offsetInSegment: Int64 = 0
    private var position: Int64 = 0
    private var descriptor: Int32 = -1

    init(body: RequestBody, length: Int64) {
        segments = body.segments
        self.length = length
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Copies up to `capacity` bytes into `destination`.
    /// - Returns: the number of bytes copied, 0 at the end of the body.
    /// - Throws: `CourierError.invalidRequest` when a file cannot be read or ends early.
    func read(into destination: UnsafeMutableRawPointer, capacity: Int) throws(CourierError) -> Int {
        let wanted = Int(Swift.min(Int64(capacity), length - position))
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
                    nextSegment()
                    continue
                }
                advance(by: count)
                return count
            }
        }
        throw CourierError(.invalidRequest, "the request body ended before its announced length")
    }

    /// Moves to `offset` bytes from the start of the body.
    /// - Returns: false when the offset lies outside the body.
    func seek(to offset: Int64) -> Bool {
        guard offset >= 0, offset <= length else { return false }
        closeFile()
        index = 0
        offsetInSegment = 0
        position = 0
        var remaining = offset
        while index < segments.count {
            let size: Int64
            switch segments[index] {
            case .data(let data): size = Int64(data.count)
            case .file(let path):
                var info = stat()
                guard stat(path, &info) == 0 else { return false }
                size = Int64(info.st_size)
            }
            if remaining < size || (remaining == 0) {
                offsetInSegment = remaining
                position = offset
                return true
            }
            remaining -= size
            index += 1
        }
        position = offset
        return remaining == 0
    }

    private func advance(by count: Int) {
        offsetInSegment += Int64(count)
        position += Int64(count)
    }

    private func nextSegment() {
        closeFile()
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

import Foundation

/// The body of an outgoing request: bytes in memory, a file streamed from disk, chunks from an
/// `AsyncSequence`, or a sequence of these (a multipart body streams its file parts between
/// in-memory pieces).
public struct RequestBody: Sendable {
    /// One piece of a body.
    enum Segment: Sendable {
        /// Bytes held in memory.
        case data(Data)
        /// A file read from disk while sending, never loaded whole.
        case file(path: String)
        /// Chunks pulled from an `AsyncSequence` while sending; can be sent once only.
        case stream(BodyStreamSource)
    }

    /// The pieces, sent in order.
    var segments: [Segment]

    init(segments: [Segment]) { self.segments = segments }

    /// A body of bytes held in memory.
    public static func data(_ data: Data) -> RequestBody { RequestBody(segments: [.data(data)]) }

    /// A body streamed from the file at `path`.
    public static func file(path: String) -> RequestBody { RequestBody(segments: [.file(path: path)]) }

    /// A body pulled chunk by chunk from `chunks` while sending, with no size limit: sent with
    /// `Content-Length` when `length` is given, else chunked. With a `length`, the sequence must
    /// yield exactly that many bytes and then finish (fewer or more fails the call with
    /// `CourierError.invalidRequest`; the last byte waits for its end); a negative `length` is
    /// refused with `CourierError.invalidRequest` when the request is sent. The sequence is read once, so
    /// the body cannot be sent again (a retry or a 307/308 redirect fails with
    /// `CourierError.invalidRequest`); use `.file(path:)` for a body that can be.
    public static func stream<S: AsyncSequence & Sendable>(_ chunks: S, length: Int64? = nil) -> RequestBody
    where S.Element == Data {
        RequestBody(segments: [.stream(BodyStreamSource(chunks, length: length))])
    }

    /// The total length, or `nil` for a streamed body of unknown length (sent chunked).
    /// - Throws: `CourierError.invalidRequest` when a file cannot be read.
    func knownLength() throws -> Int64? { try measured().length }

    /// The total length in bytes, reading file sizes from disk.
    /// - Throws: `CourierError.invalidRequest` when a file cannot be read.
    func contentLength() throws -> Int64 {
        guard let length = try measured().length else {
            throw CourierError(.invalidRequest, "the streamed body's length is not known")
        }
        return length
    }

    /// The total length (`nil` when a streamed segment has none) and the size of each file
    /// segment, in order, read from disk once: what the transfer announces and what it reads
    /// of each file (`BodyReader`), so a file that changes in between cannot shift the parts
    /// after it.
    /// - Throws: `CourierError.invalidRequest` when a file cannot be read, or a streamed
    ///   segment's length is negative.
    func measured() throws -> (length: Int64?, fileSizes: [Int64]) {
        var total: Int64? = 0
        var fileSizes: [Int64] = []
        for segment in segments {
            switch segment {
            case .data(let data):
                total = total.map { $0 + Int64(data.count) }
            case .file(let path):
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                    let size = attributes[.size] as? NSNumber
                else {
                    throw CourierError(.invalidRequest, "cannot read the body file at \(path)")
                }
                fileSizes.append(size.int64Value)
                total = total.map { $0 + size.int64Value }
            case .stream(let source):
                guard let length = source.length else {
                    total = nil
                    continue
                }
                // A negative count said nothing curl could send: -1 went out as an empty body.
                guard length >= 0 else {
                    throw CourierError(.invalidRequest, "the streamed body's length is negative (\(length))")
                }
                total = total.map { $0 + length }
            }
        }
        return (total, fileSizes)
    }

    /// The whole body as bytes, when it has no file parts (used for small bodies and tests).
    var inMemoryData: Data? {
        var result = Data()
        for segment in segments {
            guard case .data(let data) = segment else { return nil }
            result.append(data)
        }
        return result
    }
}

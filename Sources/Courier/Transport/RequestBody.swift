import Foundation

/// The body of an outgoing request: bytes in memory, a file streamed from disk, or a
/// sequence of both (a multipart body streams its file parts between in-memory pieces).
public struct RequestBody: Sendable {
    /// One piece of a body.
    enum Segment: Sendable {
        /// Bytes held in memory.
        case data(Data)
        /// A file read from disk while sending, never loaded whole.
        case file(path: String)
    }

    /// The pieces, sent in order.
    var segments: [Segment]

    init(segments: [Segment]) { self.segments = segments }

    /// A body of bytes held in memory.
    public static func data(_ data: Data) -> RequestBody { RequestBody(segments: [.data(data)]) }

    /// A body streamed from the file at `path`.
    public static func file(path: String) -> RequestBody { RequestBody(segments: [.file(path: path)]) }

    /// The total length in bytes, reading file sizes from disk.
    /// - Throws: `CourierError.invalidRequest` when a file cannot be read.
    func contentLength() throws -> Int64 {
        var total: Int64 = 0
        for segment in segments {
            switch segment {
            case .data(let data):
                total += Int64(data.count)
            case .file(let path):
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                    let size = attributes[.size] as? NSNumber
                else {
                    throw CourierError(.invalidRequest, "cannot read the body file at \(path)")
                }
                total += size.int64Value
            }
        }
        return total
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

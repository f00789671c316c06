import Foundation

/// A `multipart/form-data` body (RFC 7578): text fields, in-memory data parts, and file parts
/// streamed from disk.
///
/// File parts become `.file(path:)` segments of the ``RequestBody`` between in-memory pieces,
/// so a file is never loaded whole and the length is known before sending.
///
/// Field names and file names are written the way browsers do (WHATWG HTML): UTF-8 as is,
/// with `"`, CR and LF escaped as `%22`, `%0D`, `%0A`, and also `\` as `%5C` (servers that read
/// RFC 2045 quoted strings, such as Python's and Go's, take it for an escape, and a name ending
/// in one would run into the next parameter). ``FileNameEncoding/percentEncoded``
/// instead percent-encodes every byte outside printable ASCII (RFC 7578 §4.2) for servers
/// that only take ASCII headers. `filename*` is never used (RFC 7578 forbids it).
public struct MultipartFormData: Sendable, Encodable {
    /// How names and file names are written in `Content-Disposition`.
    public enum FileNameEncoding: Sendable, Hashable {
        /// UTF-8 as is; `"`, CR, LF escaped as `%22`, `%0D`, `%0A` (browsers, the default), and `\` as `%5C`.
        case utf8
        /// Also `%` and every byte outside printable ASCII percent-encoded.
        case percentEncoded
    }

    /// A file on disk to upload; put it in your parameters or append it to a form.
    public struct File: Sendable, Hashable, Encodable {
        /// The file's path.
        var path: String
        /// The file name sent; the last path component when nil.
        var fileName: String?
        /// The media type sent; guessed from the extension when nil.
        var contentType: String?

        /// The file at `path`, streamed from disk when the body is sent.
        /// - Parameters:
        ///   - path: the file's path.
        ///   - fileName: the name to send (defaults to the last path component).
        ///   - contentType: the media type (guessed from the extension by default).
        public init(path: String, fileName: String? = nil, contentType: String? = nil) {
            self.path = path
            self.fileName = fileName
            self.contentType = contentType
        }

        /// Only the multipart serializer can send a file; other encoders get this error.
        public func encode(to encoder: any Encoder) throws {
            throw EncodingError.invalidValue(
                self,
                EncodingError.Context(
                    codingPath: encoder.codingPath,
                    debugDescription: "a file can only be sent with the multipart serializer"))
        }
    }

    /// The bytes of a part.
    enum Content: Sendable, Hashable {
        case data(Data)
        case file(path: String)
    }

    /// One part.
    struct Part: Sendable, Hashable {
        /// The field name.
        var name: String
        /// The file name sent, if any.
        var fileName: String?
        /// The part's `Content-Type`, if any (text fields have none).
        var contentType: String?
        /// The bytes, in memory or in a file.
        var content: Content
    }

    /// The boundary between parts.
    let boundary: String
    /// How names and file names are written.
    var fileNameEncoding: FileNameEncoding
    /// The parts, in order.
    private(set) var parts: [Part] = []

    /// An empty form.
    /// - Parameters:
    ///   - boundary: the boundary, 1 to 70 characters RFC 2046 allows (checked when the body is
    ///     made); a fresh random one by default.
    ///   - fileNameEncoding: how names and file names are written.
    public init(boundary: String = MultipartFormData.makeBoundary(), fileNameEncoding: FileNameEncoding = .utf8) {
        self.boundary = boundary
        self.fileNameEncoding = fileNameEncoding
    }

    /// A random boundary: `courier-` and 32 hex digits (128 random bits), so it does not
    /// occur in the content.
    @usableFromInline static func makeBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = String(generator.next() as UInt64, radix: 16)
        let low = String(generator.next() as UInt64, radix: 16)
        return "courier-" + String(repeating: "0", count: 16 - high.count) + high
            + String(repeating: "0", count: 16 - low.count) + low
    }

    /// The `Content-Type` header value, with the boundary (quoted when it holds a separator, or
    /// `'`, which RFC 2231 gives a meaning in parameters: Python's email parser found no boundary
    /// in `boundary=a'b`).
    public var contentType: String {
        let isToken = !boundary.utf8.contains { "()/:=?, '".utf8.contains($0) }
        return "multipart/form-data; boundary=" + (isToken ? boundary : "\"\(boundary)\"")
    }

    /// Adds a text field.
    public mutating func append(_ value: String, name: String) {
        parts.append(Part(name: name, fileName: nil, contentType: nil, content: .data(Data(value.utf8))))
    }

    /// Adds bytes held in memory.
    /// - Parameters:
    ///   - data: the bytes.
    ///   - name: the field name.
    ///   - fileName: a file name to send, if any.
    ///   - contentType: the media type; `application/octet-stream` when nil.
    public mutating func append(_ data: Data, name: String, fileName: String? = nil, contentType: String? = nil) {
        parts.append(
            Part(
                name: name, fileName: fileName, contentType: contentType ?? "application/octet-stream",
                content: .data(data)))
    }

    /// Adds a file streamed from disk when the request is sent.
    /// - Parameters:
    ///   - path: the file's path.
    ///   - name: the field name.
    ///   - fileName: the name to send; the last path component when nil.
    ///   - contentType: the media type; guessed from the extension when nil.
    public mutating func appendFile(at path: String, name: String, fileName: String? = nil, contentType: String? = nil)
    {
        append(File(path: path, fileName: fileName, contentType: contentType), name: name)
    }

    /// Adds a file streamed from disk when the request is sent.
    public mutating func append(_ file: File, name: String) {
        let fileName = file.fileName ?? (file.path as NSString).lastPathComponent
        parts.append(
            Part(
                name: name, fileName: fileName,
                contentType: file.contentType
                    ?? Self.contentType(forPathExtension: (file.path as NSString).pathExtension),
                content: .file(path: file.path)))
    }

    /// Only the multipart serializer can send a form; other encoders get this error.
    public func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(
            boundary,
            EncodingError.Context(
                codingPath: encoder.codingPath, debugDescription: "a multipart form can only be sent with .multipart"))
    }
}

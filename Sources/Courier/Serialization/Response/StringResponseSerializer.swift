import Foundation

/// The body as text, in the charset named by `Content-Type` (UTF-8 when none is named); a
/// body that starts with a UTF-8 byte order mark is UTF-8, without the mark.
///
/// Knows UTF-8, US-ASCII, ISO-8859-1 (Latin-1), Windows-1252 and UTF-16 (LE/BE); another
/// charset is a `CourierError.decoding`, as are bytes that are not valid in the charset.
public struct StringResponseSerializer: ResponseSerializer {
    /// The charset used when the response names none.
    var defaultEncoding: String.Encoding

    /// A serializer reading text in the response's charset.
    /// - Parameter defaultEncoding: used when the response names no charset.
    public init(defaultEncoding: String.Encoding = .utf8) { self.defaultEncoding = defaultEncoding }

    /// Any type: text can come as anything.
    public var acceptableContentTypes: [String] { [] }

    /// Decodes the body as text; a bodiless response gives `""`.
    /// - Throws: `CourierError.decoding` for an unknown charset or invalid bytes.
    public func serialize(_ context: ResponseContext) throws -> String {
        if context.isBodiless { return "" }
        // A UTF-8 byte order mark is a signature, not text, and names the encoding whatever the
        // header says (WHATWG Encoding, "decode").
        if context.body.starts(with: utf8ByteOrderMark) {
            if let text = String(validating: context.body.dropFirst(utf8ByteOrderMark.count), as: UTF8.self) {
                return text
            }
            throw CourierError(
                .decoding, "the body is not valid UTF-8 after its byte order mark", response: context.response,
                body: context.body)
        }
        var encoding = defaultEncoding
        if let charset = context.contentType?.charset {
            guard let named = Self.encoding(forCharset: charset) else {
                throw CourierError(
                    .decoding, "the response's charset '\(charset)' is not supported", response: context.response,
                    body: context.body)
            }
            encoding = named
        }
        if encoding == .utf8 {
            // Fast path, validating: String(validating:) refuses ill-formed UTF-8.
            if let text = String(validating: context.body, as: UTF8.self) { return text }
        } else if let text = String(data: context.body, encoding: encoding) {
            return text
        }
        throw CourierError(
            .decoding, "the body is not valid \(encoding)", response: context.response, body: context.body)
    }

    /// The `String.Encoding` for an IANA charset name, if Courier knows it.
    /// - Parameter charset: a name such as `utf-8` or `ISO-8859-1` (any case).
    static func encoding(forCharset charset: String) -> String.Encoding? {
        switch charset.lowercased() {
        case "utf-8", "utf8": return .utf8
        case "us-ascii", "ascii": return .ascii
        case "iso-8859-1", "iso8859-1", "latin1", "iso_8859-1", "l1": return .isoLatin1
        case "windows-1252", "cp1252": return .windowsCP1252
        case "utf-16": return .utf16
        case "utf-16le": return .utf16LittleEndian
        case "utf-16be": return .utf16BigEndian
        default: return nil
        }
    }
}

extension ResponseSerializer where Self == StringResponseSerializer {
    /// The body as text, charset from `Content-Type`, UTF-8 by default.
    public static var string: StringResponseSerializer { StringResponseSerializer() }
}

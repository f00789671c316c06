import Foundation

/// Sends parameters as `multipart/form-data`, always in the body.
///
/// Pass a ``MultipartFormData`` built by hand, or any `Encodable`: its fields become text
/// parts named like form keys (`user[name]`), `Data` values become data parts, and
/// ``MultipartFormData/File`` values become file parts streamed from disk.
public struct MultipartRequestSerializer: RequestSerializer {
    /// Names fields and writes Booleans and dates for `Encodable` parameters.
    var fieldEncoder: URLEncodedFormEncoder
    /// How names and file names are written.
    var fileNameEncoding: MultipartFormData.FileNameEncoding

    /// A multipart serializer.
    /// - Parameters:
    ///   - fieldEncoder: how field names, Booleans and dates are written.
    ///   - fileNameEncoding: how names and file names are written.
    public init(
        fieldEncoder: URLEncodedFormEncoder = URLEncodedFormEncoder(keyOrdering: .encodingOrder),
        fileNameEncoding: MultipartFormData.FileNameEncoding = .utf8
    ) {
        self.fieldEncoder = fieldEncoder
        self.fileNameEncoding = fileNameEncoding
    }

    /// Builds the form for `parameters`.
    /// - Throws: `CourierError.encoding` when a value cannot be encoded.
    func form<Parameters: Encodable>(for parameters: Parameters) throws -> MultipartFormData {
        if let form = parameters as? MultipartFormData { return form }
        var form = MultipartFormData(fileNameEncoding: fileNameEncoding)
        try fieldEncoder.forEachField(of: parameters) { name, leaf in
            switch leaf {
            case .text(let text): form.append(text, name: name)
            case .data(let data): form.append(data, name: name)
            case .file(let file): form.append(file, name: name)
            }
        }
        return form
    }

    /// Sets the multipart body and its `Content-Type` (with the boundary).
    /// - Throws: `CourierError.encoding` when a value cannot be encoded;
    ///   `CourierError.invalidRequest` when a file cannot be read.
    public func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest) throws {
        let form = try form(for: parameters)
        let body = try form.makeBody()
        _ = try body.contentLength()  // fail now, with a clear error, if a file is missing
        request.body = body
        request.head.headerFields[.contentType] = form.contentType
    }
}

extension RequestSerializer where Self == MultipartRequestSerializer {
    /// `multipart/form-data` bodies.
    public static var multipart: MultipartRequestSerializer { MultipartRequestSerializer() }
}

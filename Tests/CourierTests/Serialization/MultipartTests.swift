import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct MultipartTests {
    static let sampleFile = Golden.url("upload-sample.txt").path

    func goldenForm(_ encoding: MultipartFormData.FileNameEncoding) -> MultipartFormData {
        var form = MultipartFormData(boundary: "courier-golden-boundary", fileNameEncoding: encoding)
        form.append("Zoë & 価格 🍕", name: "title")
        form.append("line 1\r\nline 2", name: "na\"me\r\nX-Injected: 1")
        form.append(Data([0x00, 0xFF, 0x0D, 0x0A]), name: "blob", fileName: "raw.bin")
        form.appendFile(at: Self.sampleFile, name: "attachment", fileName: "résumé \"final\" 📎.txt")
        form.append("done", name: "after")
        return form
    }

    @Test func goldenUTF8Names() throws {
        let form = goldenForm(.utf8)
        try Golden.check(try materialize(try form.makeBody()), "multipart-utf8.txt")
    }

    @Test func goldenPercentEncodedNames() throws {
        let form = goldenForm(.percentEncoded)
        try Golden.check(try materialize(try form.makeBody()), "multipart-percent-encoded.txt")
    }

    @Test func namesCannotBreakOutOfTheirHeader() throws {
        let text = String(decoding: try materialize(try goldenForm(.utf8).makeBody()), as: UTF8.self)
        #expect(text.contains("name=\"na%22me%0D%0AX-Injected: 1\""))
        #expect(!text.contains("\r\nX-Injected"))
        #expect(text.contains("filename=\"résumé %22final%22 📎.txt\""))
        let ascii = String(decoding: try materialize(try goldenForm(.percentEncoded).makeBody()), as: UTF8.self)
        #expect(ascii.contains("filename=\"r%C3%A9sum%C3%A9 %22final%22 %F0%9F%93%8E.txt\""))
    }

    /// A backslash is an escape in a quoted string (RFC 2045, RFC 9110 §5.6.4), and Python's
    /// email parser, Go's mime package and others read it so: a name ending in `\` escaped the
    /// closing quote, the name swallowed `; filename=` and the file part read as a field (Python
    /// read the name `a"; filename=`). It is written `%5C`, as `"` is written `%22`.
    @Test(arguments: [MultipartFormData.FileNameEncoding.utf8, .percentEncoded])
    func aBackslashCannotEscapeTheClosingQuote(_ encoding: MultipartFormData.FileNameEncoding) throws {
        var form = MultipartFormData(boundary: "b", fileNameEncoding: encoding)
        form.append(Data("x".utf8), name: "a\\", fileName: "C:\\temp\\", contentType: "text/plain")
        let text = String(decoding: try materialize(try form.makeBody()), as: UTF8.self)
        #expect(
            text.contains("Content-Disposition: form-data; name=\"a%5C\"; filename=\"C:%5Ctemp%5C\"\r\n"), "\(text)")
    }

    @Test func filePartsAreStreamedNotLoaded() throws {
        let body = try goldenForm(.utf8).makeBody()
        #expect(body.segments.count == 3)
        guard case .file(let path) = body.segments[1] else {
            Issue.record("the file part is not a file segment")
            return
        }
        #expect(path == Self.sampleFile)
        #expect(body.inMemoryData == nil)
        #expect(try body.contentLength() == Int64(try materialize(body).count))
    }

    @Test func largeFileLengthIsKnownWithoutReadingIt() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-big-\(UUID()).bin").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        let size: UInt64 = 3 << 30  // 3 GiB, sparse: far past any response cap and any RAM budget
        try handle.truncate(atOffset: size)
        try handle.close()

        var form = MultipartFormData(boundary: "b")
        form.appendFile(at: path, name: "big")
        let body = try form.makeBody()
        let overhead = body.segments.reduce(0) { total, segment in
            if case .data(let data) = segment { return total + data.count }
            return total
        }
        #expect(try form.contentLength() == Int64(size) + Int64(overhead))
        #expect(overhead < 200)
    }

    @Test func boundariesAreRandomAndWellFormed() {
        let first = MultipartFormData.makeBoundary()
        let second = MultipartFormData.makeBoundary()
        #expect(first != second)
        #expect(first.count == 40)
        #expect(first.hasPrefix("courier-"))
        #expect(first.dropFirst(8).allSatisfy { $0.isHexDigit })
        #expect(MultipartFormData(boundary: first).contentType == "multipart/form-data; boundary=\(first)")
    }

    @Test func contentTypesAreGuessedFromExtensions() throws {
        var form = MultipartFormData(boundary: "b")
        form.appendFile(at: "/tmp/a.PNG", name: "a")
        form.appendFile(at: "/tmp/b.json", name: "b")
        form.appendFile(at: "/tmp/c.unknown", name: "c")
        form.appendFile(at: "/tmp/d.txt", name: "d", contentType: "text/x-custom")
        #expect(
            form.parts.map(\.contentType) == [
                "image/png", "application/json", "application/octet-stream", "text/x-custom",
            ])
        #expect(form.parts.map(\.fileName) == ["a.PNG", "b.json", "c.unknown", "d.txt"])
    }

    @Test func serializerEncodesEncodableParameters() throws {
        struct Upload: Encodable {
            var title = "Trip 🏔"
            var tags = ["a", "b"]
            var meta = ["private": true]
            var thumbnail = Data([1, 2, 3])
            var document = MultipartFormData.File(path: MultipartTests.sampleFile, contentType: "text/plain")
            var missing: String? = nil
        }
        var request = makeRequest(.post)
        try MultipartRequestSerializer().serialize(Upload(), into: &request)
        let contentType = try #require(request.head.headerFields[.contentType])
        let boundary = try #require(MediaType(parsing: contentType)?.parameters["boundary"])
        #expect(contentType.hasPrefix("multipart/form-data; boundary="))
        let text = String(decoding: try materialize(request.body), as: UTF8.self)
        let names = text.components(separatedBy: "; name=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        #expect(names == ["title", "tags[]", "tags[]", "meta[private]", "thumbnail", "document"])
        #expect(text.contains("filename=\"upload-sample.txt\"\r\nContent-Type: text/plain\r\n\r\nHello from a file"))
        #expect(text.hasSuffix("--\(boundary)--\r\n"))
        #expect(request.body?.segments.count == 3)
    }

    @Test func serializerAcceptsABuiltForm() throws {
        var form = MultipartFormData(boundary: "fixed")
        form.append("v", name: "k")
        var request = makeRequest(.get)  // multipart always goes in the body, even for GET
        try RequestSerializerBox(.multipart).serialize(form, into: &request)
        #expect(request.head.headerFields[.contentType] == "multipart/form-data; boundary=fixed")
        #expect(
            try materialize(request.body)
                == Data("--fixed\r\nContent-Disposition: form-data; name=\"k\"\r\n\r\nv\r\n--fixed--\r\n".utf8))
        #expect(request.head.path == "/items")
    }

    /// On the old code a CR LF in a caller's boundary wrote the caller's header lines into the body.
    @Test(arguments: [
        "", "a\r\nX-Injected: 1", String(repeating: "b", count: 71), "trailing ", "quo\"te", "semi;colon", "nul\u{0}",
        "é",
    ])
    func boundariesRFC2046DoesNotAllowAreRefused(_ boundary: String) {
        var form = MultipartFormData(boundary: boundary)
        form.append("v", name: "k")
        #expect(thrownError { _ = try form.makeBody() }?.code == .encoding)
        var request = makeRequest()
        #expect(thrownError { try RequestSerializerBox(.multipart).serialize(form, into: &request) }?.code == .encoding)
    }

    @Test func aBoundaryWithSeparatorsIsQuotedInTheContentType() throws {
        var form = MultipartFormData(boundary: "a b:c=d?'()+_,-./")
        form.append("v", name: "k")
        #expect(form.contentType == "multipart/form-data; boundary=\"a b:c=d?'()+_,-./\"")
        #expect(try materialize(try form.makeBody()).starts(with: Data("--a b:c=d?'()+_,-./\r\n".utf8)))
        let longest = String(repeating: "b", count: 70)
        #expect(MultipartFormData(boundary: longest).contentType == "multipart/form-data; boundary=" + longest)
        #expect(throws: Never.self) { _ = try MultipartFormData(boundary: longest).makeBody() }
    }

    /// `'` is a token character (RFC 2045), but RFC 2231 gives it a meaning in parameter values,
    /// and Python's email parser (policy HTTP) found no boundary in `boundary=a'b`: the whole
    /// body read as no parts. Quoted, every reader takes it as it is.
    @Test func aBoundaryWithAnApostropheIsQuoted() {
        #expect(MultipartFormData(boundary: "it's").contentType == "multipart/form-data; boundary=\"it's\"")
        #expect(MultipartFormData(boundary: "a+b_c-d.e").contentType == "multipart/form-data; boundary=a+b_c-d.e")
    }

    @Test func errors() throws {
        var request = makeRequest()
        let missingFile = thrownError {
            try MultipartRequestSerializer().serialize(
                ["f": MultipartFormData.File(path: "/nonexistent/courier.bin")], into: &request)
        }
        #expect(missingFile?.code == .invalidRequest)

        var form = MultipartFormData()
        form.append(Data(), name: "x", contentType: "text/plain\r\nX-Evil: 1")
        #expect(thrownError { _ = try form.makeBody() }?.code == .encoding)

        let json = thrownError { try JSONRequestSerializer().serialize(MultipartFormData(), into: &request) }
        #expect(json?.code == .encoding)
        #expect(json?.message.contains(".multipart") == true)
    }
}

/// Calls a serializer through the protocol, as the client will.
struct RequestSerializerBox {
    let serializer: any RequestSerializer
    init(_ serializer: some RequestSerializer) { self.serializer = serializer }
    func serialize<P: Encodable>(_ parameters: P, into request: inout PreparedRequest) throws {
        try serializer.serialize(parameters, into: &request)
    }
}

@Suite struct MultipartSegmentTests {
    @Test func bigInMemoryPartsAreSharedNotCopied() throws {
        let big = Data(repeating: 7, count: 100_000)
        var form = MultipartFormData(boundary: "b")
        form.append("small", name: "s")
        form.append(big, name: "big")
        form.append("tail", name: "t")
        let body = try form.makeBody()
        #expect(body.segments.count == 3)
        guard case .data(let segment) = body.segments[1] else {
            Issue.record("expected the big part as its own segment")
            return
        }
        let shared = segment.withUnsafeBytes { a in big.withUnsafeBytes { b in a.baseAddress == b.baseAddress } }
        #expect(shared)
        let text = try materialize(body)
        #expect(try body.contentLength() == Int64(text.count))
        #expect(text.starts(with: Data("--b\r\nContent-Disposition: form-data; name=\"s\"\r\n\r\nsmall\r\n".utf8)))
        #expect(
            text.suffix(60).elementsEqual(
                Data("\r\n--b\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\ntail\r\n--b--\r\n".utf8).suffix(60)))
    }
}

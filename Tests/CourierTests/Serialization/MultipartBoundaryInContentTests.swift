import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// RFC 2046 §5.1.1: the boundary must not occur in a part's content. A form built with a
/// boundary of the app's choosing and a text field of the user's: the text could close the
/// field and add parts of its own to what the server reads.
@Suite struct MultipartBoundaryInContentTests {
    static let boundary = "app-upload-boundary"

    /// What a user types into a "comment" field.
    static let injected = "nice\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"role\"\r\n\r\nadmin"

    @Test func aFieldHoldingTheBoundaryIsRefusedUnsent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/profile") { _ in .json(["ok": true]) }
        let service = try ServiceFixture.service(server)
        var form = MultipartFormData(boundary: Self.boundary)
        form.append("ann", name: "user")
        form.append(Self.injected, name: "comment")

        let error = await #expect(throws: CourierError.self) {
            let _: [String: Bool] = try await service.post(
                "profile", body: form, options: CallOptions(requestSerializer: .multipart))
        }
        #expect(error?.code == .encoding)
        #expect(server.count("/profile") == 0)
    }

    /// The same bytes at the start of a data part (right after its header's blank line) and in
    /// a big part kept as a segment of its own; text that only looks like it is sent.
    @Test func theBoundaryIsFoundAtAPartsStartAndInBigParts() throws {
        var atStart = MultipartFormData(boundary: Self.boundary)
        atStart.append(Data("--\(Self.boundary)--\r\n".utf8), name: "blob")
        #expect(throws: CourierError.self) { try atStart.makeBody() }

        #expect(throws: CourierError.self) { try Self.bigForm(endingWith: "\r\n--\(Self.boundary)\r\n").makeBody() }

        var harmless = MultipartFormData(boundary: Self.boundary)
        harmless.append("the boundary is \(Self.boundary), and --\(Self.boundary) mid-line", name: "note")
        harmless.append("--\(String(Self.boundary.dropLast()))", name: "prefix")
        #expect(throws: Never.self) { try harmless.makeBody() }
    }

    /// The boundary after a bare LF: RFC 2046 writes the delimiter after CR LF, but servers read
    /// it after LF alone too (PHP's form parser looks for `\n--boundary`), so a user's text with
    /// Unix line breaks still closed the field and added a part of its own; only CR LF was looked for.
    @Test func theBoundaryAfterABareLineFeedIsRefused() throws {
        var form = MultipartFormData(boundary: Self.boundary)
        form.append(Self.injected.replacingOccurrences(of: "\r\n", with: "\n"), name: "comment")
        #expect(throws: CourierError.self) { try form.makeBody() }

        #expect(throws: CourierError.self) { try Self.bigForm(endingWith: "\n--\(Self.boundary)--").makeBody() }
    }

    /// The boundary after a bare CR: Python's email parser (and any reader splitting lines at CR,
    /// LF or CR LF) takes it for a delimiter, so text with old Mac line breaks and no LF at all
    /// closed the field and added a part (`role=admin`) of its own; only LF was looked for.
    @Test func theBoundaryAfterABareCarriageReturnIsRefused() throws {
        var form = MultipartFormData(boundary: Self.boundary)
        form.append(Self.injected.replacingOccurrences(of: "\r\n", with: "\r"), name: "comment")
        #expect(throws: CourierError.self) { try form.makeBody() }

        #expect(throws: CourierError.self) { try Self.bigForm(endingWith: "\r--\(Self.boundary)--").makeBody() }
    }

    /// A form of one part big enough to be a segment of its own, ending with `tail`.
    static func bigForm(endingWith tail: String) -> MultipartFormData {
        var form = MultipartFormData(boundary: boundary)
        var bytes = Data(repeating: 0x61, count: MultipartFormData.separateSegmentThreshold * 2)
        bytes.append(Data(tail.utf8))
        form.append(bytes, name: "blob")
        return form
    }
}

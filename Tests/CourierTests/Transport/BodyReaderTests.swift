import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct BodyReaderTests {
    func readAll(_ reader: BodyReader, chunk: Int) throws -> Data {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let read = try buffer.withUnsafeMutableBytes { try reader.read(into: $0.baseAddress!, capacity: chunk) }
            let count = try #require(read, "a body without a streamed segment never pauses")
            if count == 0 { return result }
            result.append(contentsOf: buffer[0..<count])
        }
    }

    @Test func readsMixedSegmentsAndSeeks() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-body-\(UUID()).bin").path
        let fileBytes = Data((0..<10_000).map { UInt8($0 % 251) })
        try fileBytes.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let body = RequestBody(segments: [.data(Data("head-".utf8)), .file(path: path), .data(Data("-tail".utf8))])
        let length = try body.contentLength()
        #expect(length == 10_010)
        let expected = Data("head-".utf8) + fileBytes + Data("-tail".utf8)
        let reader = BodyReader(body: body, length: length) {}
        #expect(try readAll(reader, chunk: 777) == expected)
        #expect(reader.seek(to: 3))
        #expect(try readAll(reader, chunk: 4096) == expected.dropFirst(3))
        #expect(reader.seek(to: 10_007))
        #expect(try readAll(reader, chunk: 10) == Data("ail".utf8))
        #expect(!reader.seek(to: 20_000))
    }

    @Test func missingFileFailsClearly() throws {
        let body = RequestBody.file(path: "/nonexistent/courier")
        #expect(throws: CourierError.self) { try body.contentLength() }
        let reader = BodyReader(body: body, length: 10) {}
        #expect(throws: CourierError.self) { try readAll(reader, chunk: 10) }
    }
}

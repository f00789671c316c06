import HTTPTypes
import Testing

@testable import Courier

@Suite struct ResponseHeadParserTests {
    func feed(_ lines: [String]) -> (ResponseHeadParser, [ResponseHeadParser.Event]) {
        var parser = ResponseHeadParser()
        var events: [ResponseHeadParser.Event] = []
        for line in lines {
            let bytes = Array(line.utf8)
            events.append(bytes.withUnsafeBufferPointer { parser.consume($0) })
        }
        return (parser, events)
    }

    @Test func parsesStatusAndFields() {
        let (parser, events) = feed([
            "HTTP/1.1 201 Created\r\n", "Content-Length: 12\r\n", "X-Many: a\r\n", "X-Many: b\r\n",
            "X-Folded: one\r\n", "  two\r\n", "\r\n",
        ])
        #expect(events.last == .complete)
        let response = parser.response
        #expect(response.status.code == 201)
        #expect(response.status.reasonPhrase == "Created")
        #expect(response.headerFields[values: HTTPField.Name("X-Many")!] == ["a", "b"])
        #expect(response.headerFields[HTTPField.Name("X-Folded")!] == "one two")
        #expect(parser.contentLength == 12)
        #expect(!parser.isEncoded)
    }

    @Test func skipsInterimHeads() {
        let (parser, events) = feed([
            "HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/2 200 \r\n", "content-encoding: gzip\r\n", "\r\n",
        ])
        #expect(events == [.needMore, .needMore, .needMore, .needMore, .complete])
        #expect(parser.response.status == .ok)
        #expect(parser.isEncoded)
    }

    @Test func rejectsGarbage() {
        #expect(feed(["HTTP/1.1 abc\r\n"]).1 == [.invalid])
        #expect(feed(["\r\n"]).1 == [.invalid])
    }

    @Test func ignoresInvalidFieldNames() {
        let (parser, _) = feed(["HTTP/1.1 200 OK\r\n", "Bad Name: x\r\n", "Good: y\r\n", "\r\n"])
        #expect(parser.response.headerFields.count == 1)
    }
}

import HTTPTypes
import PropertyBased
import Testing

@_spi(Fuzzing) @testable import Courier

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

    @Test func foldedLinesKeepTheOrderOfFields() {
        let (parser, _) = feed([
            "HTTP/1.1 200 OK\r\n", "A: 1\r\n", "B: 2\r\n", " more\r\n", "C: 3\r\n", "A: 4\r\n", "\r\n",
        ])
        let fields = parser.response.headerFields
        #expect(fields.map(\.name.rawName) == ["A", "B", "C", "A"])
        #expect(fields.map(\.value) == ["1", "2 more", "3", "4"])
    }

    /// A fold continues the last field only: folding a second `Set-Cookie` used to replace
    /// every `Set-Cookie` field by one joined value.
    @Test func foldingARepeatedFieldChangesOnlyTheLastOne() {
        let (parser, _) = feed([
            "HTTP/1.1 200 OK\r\n", "Set-Cookie: a=1\r\n", "Set-Cookie: b=2;\r\n", "\tPath=/\r\n", "\r\n",
        ])
        #expect(parser.response.headerFields[values: .setCookie] == ["a=1", "b=2; Path=/"])
    }

    /// Trailer fields after the final head's empty line never become header fields.
    @Test func trailersAreNotHeaderFields() {
        let (parser, events) = feed([
            "HTTP/1.1 200 OK\r\n", "X-Head: head\r\n", "\r\n", "X-Trailer: t\r\n", "X-Head: trailer\r\n",
            "HTTP/1.1 500 Not A Head\r\n", "\r\n",
        ])
        #expect(events == [.needMore, .needMore, .complete, .needMore, .needMore, .needMore, .needMore])
        #expect(parser.response.status == .ok)
        #expect(parser.response.headerFields.map(\.value) == ["head"])
    }

    @Test func headsAreBoundedInFieldsAndBytes() {
        let flood = ["HTTP/1.1 200 OK\r\n"] + (0...ResponseHeadParser.maxFieldCount).map { "X-\($0): v\r\n" }
        let (_, events) = feed(flood)
        #expect(events.last == .tooLarge)
        #expect(events.dropLast().allSatisfy { $0 == .needMore })

        let line = "X-Big: " + String(repeating: "a", count: 50_000) + "\r\n"
        let (_, bigEvents) = feed(["HTTP/1.1 200 OK\r\n"] + Array(repeating: line, count: 6))
        #expect(bigEvents.last == .tooLarge)

        // Interim heads count too: a server cannot reset the bound by sending 100 Continue.
        let interim = Array(repeating: ["HTTP/1.1 100 Continue\r\n", "X-A: a\r\n", "\r\n"], count: 1_200).flatMap { $0 }
        #expect(feed(interim).1.contains(.tooLarge))

        // Folds count against the bytes.
        let folds =
            ["HTTP/1.1 200 OK\r\n", "X-F: a\r\n"]
            + Array(repeating: " " + String(repeating: "b", count: 1000) + "\r\n", count: 300)
        #expect(feed(folds).1.last == .tooLarge)
    }

    @Test func foldsUpToTheBoundKeepEveryByteInOrder() {
        let pieces = (0..<900).map { " p\($0)\r\n" }
        let (parser, events) = feed(["HTTP/1.1 200 OK\r\n", "X-F: start\r\n"] + pieces + ["X-After: 1\r\n", "\r\n"])
        #expect(events.last == .complete)
        let expected = "start " + (0..<900).map { "p\($0)" }.joined(separator: " ")
        #expect(parser.response.headerFields[HTTPField.Name("X-F")!] == expected)
        #expect(parser.response.headerFields[HTTPField.Name("X-After")!] == "1")
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

    @Test func knownNamesKeepTheServersSpelling() {
        let (parser, _) = feed([
            "HTTP/1.1 200 OK\r\n", "Content-Type: a/b\r\n", "content-length: 3\r\n", "CONTENT-ENCODING: x\r\n",
            "etag: \"1\"\r\n", "\r\n",
        ])
        let names = parser.response.headerFields.map(\.name)
        #expect(names.map(\.rawName) == ["Content-Type", "content-length", "CONTENT-ENCODING", "etag"])
        #expect(names == [.contentType, .contentLength, .contentEncoding, .eTag])
        #expect(parser.contentLength == 3)
        #expect(parser.isEncoded)
    }

    @Test func namesMatchTheGeneralConstruction() async {
        let letters = Array("Content-TypeLgthDaWWAuicSrv-:x ") as [Character]
        let names = Gen<Character?>.element(of: letters).map { $0! }.string(of: 0...16)
        let known = ["Content-Type", "content-type", "ETag", "etag", "Etag", "WWW-Authenticate", "Date", "DATE"]
        for text in known + ["", "Bad Name", "Content-Typ"] { Self.expectSameName(text) }
        await propertyCheck(count: 500, input: names) { Self.expectSameName($0) }
    }

    static func expectSameName(_ text: String) {
        let bytes = Array(text.utf8)
        let fast = bytes.withUnsafeBufferPointer { KnownFieldNames.name($0)?.0 }
        let general = HTTPField.Name(text)
        #expect(fast?.rawName == general?.rawName && fast?.canonicalName == general?.canonicalName, "\(text)")
    }

    @Test func valuesMatchTheLenientConstruction() async {
        let alphabet: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x20, 0x41, 0x7E, 0x7F, 0x80, 0xC3, 0xA9, 0xFF]
        let bytes = Gen<UInt8?>.element(of: alphabet).map { $0! }.array(of: 0...8)
        await propertyCheck(count: 1_000, input: bytes) { value in
            let fast = value.withUnsafeBufferPointer { ResponseHeadParser.field(name: .server, value: $0) }
            // Control bytes (but HTAB) become spaces first, trimmed at the edges like any value.
            let cleaned = value.withUnsafeBufferPointer { ResponseHeadParser.withoutControlBytes($0) }
            let lenient = HTTPField(name: .server, lenientValue: cleaned)
            #expect(fast == lenient)
            #expect(fast.value == lenient.value)
            #expect(!fast.value.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F })
            if value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }), value.first.map({ $0 > 0x20 }) ?? true,
                value.last.map({ $0 > 0x20 }) ?? true
            {
                // Without control bytes or edge whitespace: exactly the lenient construction.
                #expect(fast == HTTPField(name: .server, lenientValue: value))
            }
        }
    }

    @Test func contentLengthParsesAsInt64Does() async {
        let digits = Array("0123456789+- x") as [Character]
        let texts = Gen<Character?>.element(of: digits).map { $0! }.string(of: 0...21)
        let edges = [
            "", "+", "-", "-0", "+7", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
            "-9223372036854775809", "1 2", "0x10", "007",
        ]
        for text in edges { Self.expectSameLength(text) }
        await propertyCheck(count: 1_000, input: texts) { Self.expectSameLength($0) }
    }

    static func expectSameLength(_ text: String) {
        let parsed = Array(text.utf8).withUnsafeBufferPointer { ResponseHeadParser.decimal($0) }
        #expect(parsed == Int64(text), "\(text)")
    }

    @Test func reasonPhrasesAreTrimmed() {
        #expect(feed(["HTTP/1.1 404 \tNot Found \t\r\n"]).0.response.status.reasonPhrase == "Not Found")
        #expect(feed(["HTTP/1.1 200 \u{A0}Fine\u{A0}\r\n"]).0.response.status.reasonPhrase == "Fine")
        #expect(feed(["HTTP/2 204\r\n"]).0.response.status.reasonPhrase == "")
    }
}

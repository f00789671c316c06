import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct ResponseSerializerTests {
    @Test func dataReturnsTheBodyUnchanged() throws {
        let bytes = Data([0, 1, 2, 255])
        #expect(try DataResponseSerializer.data.serialize(makeContext(contentType: nil, bytes: bytes)) == bytes)
        #expect(
            try DataResponseSerializer.data.serialize(makeContext(status: 204, contentType: nil, bytes: bytes)).isEmpty)
        #expect(DataResponseSerializer.data.acceptHeader == nil)
    }

    @Test(arguments: [
        ("text/plain", Data("héllo".utf8), "héllo"),
        ("text/plain; charset=utf-8", Data("héllo".utf8), "héllo"),
        ("text/plain; charset=\"ISO-8859-1\"", Data([0x68, 0xE9, 0x6C, 0x6C, 0x6F]), "héllo"),
        ("text/html;charset=latin1", Data([0xC6]), "Æ"),
        ("text/plain; charset=windows-1252", Data([0x80]), "€"),
        ("text/plain; charset=us-ascii", Data("plain".utf8), "plain"),
        ("text/plain; charset=utf-16le", Data([0x68, 0x00, 0xE9, 0x00]), "hé"),
    ])
    func stringUsesTheCharsetFromContentType(contentType: String, bytes: Data, expected: String) throws {
        #expect(
            try StringResponseSerializer.string.serialize(makeContext(contentType: contentType, bytes: bytes))
                == expected)
    }

    /// A UTF-8 byte order mark is the encoding's signature, not text, and it says the body is
    /// UTF-8 whatever the header (or the default) claims, as browsers decode (WHATWG Encoding,
    /// "decode"): before, the text began with U+FEFF, or with `ï»¿` under a Latin-1 label.
    @Test(arguments: [
        "text/plain", "text/plain; charset=utf-8", "text/plain; charset=iso-8859-1",
        "text/plain; charset=windows-1252",
    ])
    func aUTF8ByteOrderMarkIsNotTextAndNamesTheEncoding(contentType: String) throws {
        let bytes = Data([0xEF, 0xBB, 0xBF]) + Data("héllo".utf8)
        #expect(
            try StringResponseSerializer.string.serialize(makeContext(contentType: contentType, bytes: bytes))
                == "héllo")
        #expect(
            try StringResponseSerializer(defaultEncoding: .isoLatin1).serialize(
                makeContext(contentType: nil, bytes: bytes)) == "héllo")
    }

    @Test func stringDefaultsToUTF8AndCanBeConfigured() throws {
        let latin1 = Data([0xE9])
        #expect(
            try StringResponseSerializer(defaultEncoding: .isoLatin1).serialize(
                makeContext(contentType: nil, bytes: latin1)) == "é")
        let invalid = thrownError {
            _ = try StringResponseSerializer.string.serialize(makeContext(contentType: nil, bytes: latin1))
        }
        #expect(invalid?.code == .decoding)
        let unknown = thrownError {
            _ = try StringResponseSerializer.string.serialize(
                makeContext(contentType: "text/plain; charset=klingon", body: "x"))
        }
        #expect(unknown?.code == .decoding)
        #expect(unknown?.message.contains("klingon") == true)
        #expect(
            try StringResponseSerializer.string.serialize(makeContext(status: 204, contentType: nil, body: "")) == "")
    }

    @Test(arguments: [(204, HTTPRequest.Method.get), (205, .post), (200, .head), (200, .get)])
    func emptyBodiesDecodeToEmptyOrNil(status: Int, method: HTTPRequest.Method) throws {
        let context = makeContext(status: status, body: "", method: method)
        #expect(try ResponsePipeline().process(context, with: .decodable(Empty.self)) == Empty())
        #expect(try ResponsePipeline().process(context, with: .decodable(Address?.self)) == nil)
        let error = thrownError { _ = try ResponsePipeline().process(context, with: .decodable(Address.self)) }
        #expect(error?.code == .emptyBody)
        #expect(error?.message.contains("Address") == true)
        #expect(error?.response?.status.code == status)
    }

    @Test func bodiesOfHeadAnd204AreIgnored() throws {
        // A HEAD response must not be decoded even if a body slipped through.
        let head = makeContext(status: 200, body: "garbage", method: .head)
        #expect(try ResponsePipeline().process(head, with: .decodable(Address?.self)) == nil)
        #expect(
            try DecodableResponseSerializer.decodable(Empty.self).serialize(makeContext(body: "not json")) == Empty())
        // 304 fails default validation, but a serializer treats it as bodiless.
        #expect(
            try DecodableResponseSerializer.decodable(Address?.self).serialize(makeContext(status: 304, body: "x"))
                == nil)
    }

    @Test func optionalModelsDecodeWhenPresent() throws {
        let context = makeContext(body: #"{"city":"A","zip":"1"}"#)
        #expect(
            try ResponsePipeline().process(context, with: .decodable(Address?.self)) == Address(city: "A", zip: "1"))
        #expect(try ResponsePipeline().process(makeContext(body: "null"), with: .decodable(Address?.self)) == nil)
    }
}

@Suite struct MediaTypeTests {
    @Test func parsesTypeSubtypeAndParameters() throws {
        let type = try #require(MediaType(parsing: " Application/JSON ; Charset=\"UTF-8\"; q=0.5"))
        #expect(type.essence == "application/json")
        #expect(type.charset == "utf-8")
        #expect(type.parameters["q"] == "0.5")
        #expect(MediaType(parsing: "nonsense") == nil)
        #expect(MediaType(parsing: "/json") == nil)
        #expect(type.description == "application/json; charset=UTF-8; q=0.5")
    }

    @Test(arguments: [
        ("application/json", "application/json", true),
        ("application/json", "*/*", true),
        ("application/json", "application/*", true),
        ("application/json", "text/*", false),
        ("application/json", "application/xml", false),
        ("text/html; charset=utf-8", "TEXT/HTML", true),
    ])
    func wildcardsMatch(type: String, pattern: String, expected: Bool) throws {
        #expect(try #require(MediaType(parsing: type)).matches(any: [pattern]) == expected)
        #expect(MediaType.contentType(type, matchesAny: [pattern]) == expected)
    }

    @Test func inPlaceMatchingHandlesOddHeaders() {
        #expect(MediaType.contentType("  application/JSON  ;charset=utf-8", matchesAny: ["application/json"]))
        #expect(MediaType.contentType("application/json", matchesAny: ["text/plain", " application/* ; q=1"]))
        #expect(!MediaType.contentType("application/jsonx", matchesAny: ["application/json"]))
        #expect(!MediaType.contentType("application", matchesAny: ["*/*"]))
        #expect(!MediaType.contentType("application/", matchesAny: ["application/*"]))
        #expect(!MediaType.contentType("application/json", matchesAny: ["garbage", ""]))
        #expect(!MediaType.contentType("", matchesAny: ["*/*"]))
    }
}

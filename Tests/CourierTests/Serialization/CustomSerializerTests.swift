import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A serializer written outside Courier: `key=value` lines (`text/x-key-value`), both ways.
/// It uses only public API, as an app or another module would.
struct KeyValueLinesSerializer: RequestSerializer, ResponseSerializer {
    var acceptableContentTypes: [String] { ["text/x-key-value"] }

    func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest) throws {
        // Reuse Courier's form encoder to flatten the value, then write one pair per line.
        let query = try URLEncodedFormEncoder(nesting: .dots, arrays: .indexed).encodeQuery(parameters)
        let lines = query.split(separator: "&").map { pair in
            pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                .map { $0.removingPercentEncoding ?? String($0) }.joined(separator: "=")
        }
        request.setBody(Data((lines.joined(separator: "\n") + "\n").utf8), contentType: "text/x-key-value")
    }

    func serialize(_ context: ResponseContext) throws -> [String: String] {
        var result: [String: String] = [:]
        for line in String(decoding: context.body, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw CourierError(
                    .decoding, "the line '\(line)' has no '='", response: context.response, body: context.body)
            }
            result[String(parts[0])] = String(parts[1])
        }
        return result
    }
}

extension ResponseSerializer where Self == KeyValueLinesSerializer {
    static var keyValueLines: KeyValueLinesSerializer { KeyValueLinesSerializer() }
}

/// A model format written outside Courier, usable wherever `.json` is (per call, or a client default).
struct KeyValueModelDecoding: ModelDecoding {
    var acceptableContentTypes: [String] { ["text/x-key-value"] }
    func decode<T: Decodable>(_ type: T.Type, from body: Data, context: ResponseContext) throws -> T {
        let lines = String(decoding: body, as: UTF8.self).split(separator: "\n").joined(separator: "&")
        return try URLEncodedFormDecoder(nesting: .dots).decode(type, fromQuery: lines)
    }
}

extension ModelDecoding where Self == KeyValueModelDecoding {
    static var keyValue: KeyValueModelDecoding { KeyValueModelDecoding() }
}

@Suite struct CustomSerializerTests {
    @Test func requestSide() throws {
        var request = makeRequest(.post)
        try RequestSerializerBox(KeyValueLinesSerializer()).serialize(Profile.sample, into: &request)
        #expect(request.head.headerFields[.contentType] == "text/x-key-value")
        #expect(
            request.body?.inMemoryData
                == Data(
                    "active=true\naddress.city=Oslo\naddress.zip=0150\nage=30\nname=Ann Lee\ntags[0]=a\ntags[1]=b\n"
                        .utf8))
    }

    @Test func responseSideThroughThePipeline() throws {
        let context = makeContext(contentType: "text/x-key-value", body: "a=1\nb=two=2\n")
        #expect(try ResponsePipeline().process(context, with: .keyValueLines) == ["a": "1", "b": "two=2"])
        #expect(KeyValueLinesSerializer().acceptHeader == "text/x-key-value")
        let wrongType = thrownError {
            _ = try ResponsePipeline().process(makeContext(body: "a=1"), with: .keyValueLines)
        }
        #expect(wrongType?.code == .unacceptableContentType)
        let broken = thrownError {
            _ = try ResponsePipeline().process(
                makeContext(contentType: "text/x-key-value", body: "oops"), with: .keyValueLines)
        }
        #expect(broken?.code == .decoding)
    }

    @Test func customModelFormatPlugsIntoDecodableAndNegotiation() throws {
        let context = makeContext(contentType: "text/x-key-value", body: "city=Oslo\nzip=0150\n")
        #expect(
            try ResponsePipeline().process(context, with: .decodable(Address.self, using: .keyValue))
                == Address(city: "Oslo", zip: "0150"))
        let negotiated = NegotiatingResponseSerializer<Address>.negotiating(
            Address.self, among: [JSONModelDecoding.shared, KeyValueModelDecoding()])
        #expect(try negotiated.serialize(context) == Address(city: "Oslo", zip: "0150"))
        #expect(negotiated.acceptHeader == "application/json, text/json, text/x-key-value;q=0.9")
    }

    @Test func aFormatCanDeclareEmptyBodiesValid() throws {
        /// Like protobuf: an empty body is a message with every field at its default.
        struct DefaultsWhenEmpty: ModelDecoding {
            var acceptableContentTypes: [String] { ["application/x-defaults"] }
            var decodesEmptyBodies: Bool { true }
            func decode<T: Decodable>(_ type: T.Type, from body: Data, context: ResponseContext) throws -> T {
                try URLEncodedFormDecoder().decode(type, from: body)
            }
        }
        struct Settings: Decodable, Sendable, Equatable { var theme: String? }
        let empty = makeContext(contentType: "application/x-defaults", body: "")
        #expect(
            try ResponsePipeline().process(empty, with: .decodable(Settings.self, using: DefaultsWhenEmpty()))
                == Settings(theme: nil))
        // Bodiless responses still never reach the decoder.
        let noContent = makeContext(status: 204, contentType: nil, body: "")
        #expect(
            thrownError {
                _ = try DecodableResponseSerializer.decodable(Settings.self, using: DefaultsWhenEmpty()).serialize(
                    noContent)
            }?.code == .emptyBody)
        // JSON does not: an empty 200 is an empty-body error, not a JSON syntax error.
        #expect(
            thrownError { _ = try ResponsePipeline().process(makeContext(body: ""), with: .decodable(Settings.self)) }?
                .code == .emptyBody)
    }

    @Test func aClientDefaultCanBeAnyFormat() throws {
        // What a client configuration stores: an existential default, used for every call.
        let defaultFormat: any ModelDecoding = KeyValueModelDecoding()
        let serializer = DecodableResponseSerializer(Address.self, anyDecoding: defaultFormat)
        let context = makeContext(contentType: "text/x-key-value", body: "city=A\nzip=1")
        #expect(try ResponsePipeline().process(context, with: serializer) == Address(city: "A", zip: "1"))
    }
}

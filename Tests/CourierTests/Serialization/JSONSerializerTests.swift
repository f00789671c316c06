import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct JSONSerializerTests {
    struct Event: Codable, Equatable, Sendable {
        var eventName: String
        var startsAt: Date
        var payload: Data
    }

    @Test func bodyForPostQueryForGetHeadDelete() throws {
        for method in [HTTPRequest.Method.post, .put, .patch] {
            var request = makeRequest(method)
            try RequestSerializerBox(.json).serialize(Address(city: "Oslo", zip: "0150"), into: &request)
            #expect(request.head.headerFields[.contentType] == "application/json")
            let decoded = try JSONDecoder().decode(Address.self, from: try #require(request.body?.inMemoryData))
            #expect(decoded == Address(city: "Oslo", zip: "0150"))
            #expect(request.head.path == "/items")
        }
        for method in [HTTPRequest.Method.get, .head, .delete] {
            var request = makeRequest(method, path: "/items?page=2")
            try RequestSerializerBox(.json).serialize(Address(city: "Oslo", zip: "0150"), into: &request)
            #expect(request.body == nil)
            #expect(request.head.headerFields[.contentType] == nil)
            #expect(request.head.path == "/items?page=2&city=Oslo&zip=0150")
        }
    }

    @Test func destinationCanBeForced() throws {
        var get = makeRequest(.get)
        try RequestSerializerBox(.json(destination: .body)).serialize(["a": 1], into: &get)
        #expect(get.body?.inMemoryData == Data(#"{"a":1}"#.utf8))
        var post = makeRequest(.post)
        try RequestSerializerBox(.json(destination: .queryString)).serialize(["a": 1], into: &post)
        #expect(post.head.path == "/items?a=1")
        #expect(post.body == nil)
    }

    @Test func callersContentTypeIsKept() throws {
        var request = makeRequest(.post)
        request.head.headerFields[.contentType] = "application/vnd.api+json"
        try JSONRequestSerializer.shared.serialize(["a": 1], into: &request)
        #expect(request.head.headerFields[.contentType] == "application/vnd.api+json")
    }

    @Test func encoderStrategiesAreConfigurable() throws {
        let serializer = JSONRequestSerializer(
            keys: .convertToSnakeCase, dates: .secondsSince1970, data: .base64, outputFormatting: .sortedKeys)
        var request = makeRequest(.post)
        let event = Event(eventName: "launch", startsAt: Date(timeIntervalSince1970: 10), payload: Data([1]))
        try serializer.serialize(event, into: &request)
        #expect(
            String(decoding: try #require(request.body?.inMemoryData), as: UTF8.self)
                == #"{"event_name":"launch","payload":"AQ==","starts_at":10}"#)
    }

    @Test func decoderStrategiesAreConfigurable() throws {
        let decoding = JSONModelDecoding(keys: .convertFromSnakeCase, dates: .secondsSince1970)
        let context = makeContext(body: #"{"event_name":"launch","starts_at":10,"payload":"AQ=="}"#)
        let event = try ResponsePipeline().process(context, with: .json(Event.self, decoding: decoding))
        #expect(event == Event(eventName: "launch", startsAt: Date(timeIntervalSince1970: 10), payload: Data([1])))
        let viaFactory = try DecodableResponseSerializer.decodable(
            Event.self, using: .json(keys: .convertFromSnakeCase, dates: .secondsSince1970)
        ).serialize(context)
        #expect(viaFactory == event)
    }

    @Test func decodingErrorsCarryCodingPathAndUnderlyingError() throws {
        struct Cart: Decodable { var items: [Item] }
        struct Item: Decodable { var price: Int }
        let context = makeContext(body: #"{"items":[{"price":1},{"price":2},{"price":3},{"price":"4"}]}"#)
        let error = thrownError { _ = try DecodableResponseSerializer.decodable(Cart.self).serialize(context) }
        #expect(error?.code == .decoding)
        #expect(error?.codingPath == "items.3.price")
        #expect(error?.underlying is DecodingError)
        #expect(error?.response?.status.code == 200)
        #expect(error?.body == context.body)
        #expect(error?.description.contains("at items.3.price") == true)

        let missing = thrownError {
            _ = try DecodableResponseSerializer.decodable(Cart.self).serialize(makeContext(body: #"{"items":[{}]}"#))
        }
        #expect(missing?.codingPath == "items.0.price")

        let garbage = thrownError {
            _ = try DecodableResponseSerializer.decodable(Cart.self).serialize(makeContext(body: "<html>"))
        }
        #expect(garbage?.code == .decoding)
    }

    @Test func encodingErrorsCarryCodingPath() throws {
        var request = makeRequest(.post)
        let error = thrownError {
            try JSONRequestSerializer.shared.serialize(["outer": ["x": Double.infinity]], into: &request)
        }
        #expect(error?.code == .encoding)
        #expect(error?.codingPath == "outer.x")
    }

    @Test func customJSONDecodingIsUsedThroughTheAbstraction() throws {
        /// Stands in for the fast decoder: counts calls, delegates to Foundation.
        final class CountingDecoder: JSONDecoding, @unchecked Sendable {
            // @unchecked: `calls` is only touched by this single-threaded test.
            var calls = 0
            func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
                calls += 1
                return try JSONDecoder().decode(type, from: data)
            }
        }
        let counting = CountingDecoder()
        let serializer = DecodableResponseSerializer.json(Address.self, decoding: JSONModelDecoding(decoder: counting))
        for _ in 0..<3 { _ = try serializer.serialize(makeContext(body: #"{"city":"A","zip":"1"}"#)) }
        #expect(counting.calls == 3)
        #expect(serializer.acceptableContentTypes == ["application/json", "text/json"])
        #expect(serializer.acceptHeader == "application/json, text/json")
    }

    /// The defaults are Courier's value-type coders (nothing to rebuild); Foundation's class
    /// coders, when chosen, are one shared instance.
    @Test func sharedDefaultsAreReusedNotRebuilt() {
        #expect(JSONModelDecoding.json.decoder is CourierJSONDecoder)
        #expect(JSONRequestSerializer.json.encoder is CourierJSONEncoder)
        let sameFoundationDecoder =
            (JSONModelDecoding.foundationJSON.decoder as AnyObject)
            === (JSONModelDecoding.foundationJSON.decoder as AnyObject)
        #expect(sameFoundationDecoder)
    }
}

@Suite struct SharedCoderConcurrencyTests {
    @Test func sharedDecoderServesConcurrentCalls() async throws {
        let serializer = DecodableResponseSerializer.json(Profile.self)
        let body = try JSONEncoder().encode(Profile.sample)
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var matches = 0
                    for _ in 0..<200 where try serializer.serialize(makeContext(bytes: body)) == .sample {
                        matches += 1
                    }
                    return matches
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(results == 1600)
    }

    @Test func acceptHeaderIsSetFromTheResponseSerializer() {
        var request = makeRequest(.get)
        request.accept(DecodableResponseSerializer.json(Profile.self))
        #expect(request.head.headerFields[.accept] == "application/json, text/json")
        request.accept(StringResponseSerializer.string)
        #expect(request.head.headerFields[.accept] == "application/json, text/json")
        var plain = makeRequest(.get)
        plain.accept(DataResponseSerializer.data)
        #expect(plain.head.headerFields[.accept] == nil)
    }
}

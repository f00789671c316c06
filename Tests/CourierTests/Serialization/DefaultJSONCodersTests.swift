import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// `.json` runs on Courier's own coders; Foundation's stay selectable.
@Suite struct DefaultJSONCodersTests {
    struct Item: Codable, Equatable {
        var id: Int
        var name: String
    }

    @Test func defaultsAreCouriersCoders() {
        #expect(DefaultJSONCoders.decoder is CourierJSONDecoder)
        #expect(DefaultJSONCoders.encoder is CourierJSONEncoder)
        #expect(JSONModelDecoding.shared.decoder is CourierJSONDecoder)
        #expect(JSONModelDecoding(keys: .convertFromSnakeCase).decoder is CourierJSONDecoder)
        #expect(JSONRequestSerializer(keys: .convertToSnakeCase).encoder is CourierJSONEncoder)
        #expect(JSONModelDecoding.foundationJSON.decoder is JSONDecoder)
    }

    /// A trailing comma is one of the documented differences: RFC 8259 rejects it, Foundation accepts it.
    @Test func foundationStaysSelectablePerCall() throws {
        let context = makeContext(body: #"{"id": 1, "name": "a",}"#)
        #expect(throws: CourierError.self) {
            _ = try JSONModelDecoding.json.decode(Item.self, from: context.body, context: context)
        }
        let item = try JSONModelDecoding.foundationJSON.decode(Item.self, from: context.body, context: context)
        #expect(item == Item(id: 1, name: "a"))
    }

    @Test func strategiesReachCouriersDecoder() throws {
        let context = makeContext(body: #"{"item_id": 7}"#)
        struct Snake: Decodable, Equatable { var itemId: Int }
        let value = try JSONModelDecoding(keys: .convertFromSnakeCase).decode(
            Snake.self, from: context.body, context: context)
        #expect(value == Snake(itemId: 7))
    }
}

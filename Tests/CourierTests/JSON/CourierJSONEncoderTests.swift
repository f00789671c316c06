import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// Encoder semantics, byte for byte against Foundation where its output is deterministic.
@Suite struct CourierJSONEncoderTests {
    struct Page: Codable, Equatable {
        var title: String
        var tags: [String]
        var empty: [Int]
        var children: [String: Page]
        var link: URL?
        var score: Double
        var when: Date
        var blob: Data
        var amount: Decimal
    }

    static let page = Page(
        title: "a/b \"c\" \u{1}\u{7f} é😀", tags: ["x", "y/z"], empty: [],
        children: [
            "kid": Page(
                title: "k", tags: [], empty: [], children: [:], link: nil, score: 1e-7,
                when: .init(timeIntervalSince1970: 0), blob: Data(), amount: 0)
        ],
        link: URL(string: "https://example.com/a?b=c"), score: 123456789.125,
        when: Date(timeIntervalSince1970: 1_700_000_000.25),
        blob: Data([0, 1, 2, 250]), amount: Decimal(string: "12.50")!)

    static let formats: [JSONEncoder.OutputFormatting] = [
        [.sortedKeys], [.sortedKeys, .prettyPrinted], [.sortedKeys, .withoutEscapingSlashes],
        [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes],
    ]

    @Test(arguments: formats)
    func sortedOutputIsFoundations(_ format: JSONEncoder.OutputFormatting) throws {
        var ours = CourierJSONEncoder()
        ours.outputFormatting = format
        let theirs = JSONEncoder()
        theirs.outputFormatting = format
        for strategy in [
            JSONEncoder.DateEncodingStrategy.deferredToDate, .secondsSince1970, .millisecondsSince1970, .iso8601,
        ] {
            ours.dateEncodingStrategy = strategy
            theirs.dateEncodingStrategy = strategy
            let a = try ours.encode(Self.page)
            let b = try theirs.encode(Self.page)
            #expect(a == b, "\(String(decoding: a, as: UTF8.self))\n\(String(decoding: b, as: UTF8.self))")
        }
        ours.keyEncodingStrategy = .convertToSnakeCase
        theirs.keyEncodingStrategy = .convertToSnakeCase
        #expect(try ours.encode(Self.page) == theirs.encode(Self.page))
    }

    @Test func unsortedOutputKeepsEncodingOrder() throws {
        let data = try CourierJSONEncoder().encode(CourierJSONDecoderTests.Profile(name: "n", nickname: "k", age: 3))
        #expect(String(decoding: data, as: UTF8.self) == #"{"name":"n","nickname":"k","age":3}"#)
    }

    struct Twice: Encodable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: JSONKey.self)
            try container.encode(1, forKey: .string("a"))
            try container.encode(2, forKey: .string("b"))
            try container.encode(3, forKey: .string("a"))
        }
    }

    /// Documented difference: without sorting, a key encoded twice is written twice.
    @Test func keyEncodedTwice() throws {
        var sorted = CourierJSONEncoder()
        sorted.outputFormatting = .sortedKeys
        let foundation = JSONEncoder()
        foundation.outputFormatting = .sortedKeys
        #expect(try sorted.encode(Twice()) == foundation.encode(Twice()))
        #expect(String(decoding: try sorted.encode(Twice()), as: UTF8.self) == #"{"a":3,"b":2}"#)
        #expect(String(decoding: try CourierJSONEncoder().encode(Twice()), as: UTF8.self) == #"{"a":1,"b":2,"a":3}"#)
    }

    struct Interleaved: Encodable {
        enum Keys: String, CodingKey { case first, second }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var first = container.nestedUnkeyedContainer(forKey: .first)
            var second = container.nestedUnkeyedContainer(forKey: .second)
            try second.encode(2)
            try first.encode(1)
        }
    }

    /// Documented difference: containers must be filled in nesting order.
    @Test func interleavedContainersThrow() throws {
        #expect((try? JSONEncoder().encode(Interleaved())) != nil)
        #expect(throws: EncodingError.self) { try CourierJSONEncoder().encode(Interleaved()) }
    }

    struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }

    @Test func emptyValues() throws {
        #expect(throws: EncodingError.self) { try CourierJSONEncoder().encode(Nothing()) }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(Nothing()) }
        #expect(try CourierJSONEncoder().encode([Nothing()]) == JSONEncoder().encode([Nothing()]))
        #expect(try CourierJSONEncoder().encode("top") == JSONEncoder().encode("top"))
        #expect(try CourierJSONEncoder().encode(Optional<Int>.none) == JSONEncoder().encode(Optional<Int>.none))
    }

    @Test func nonConformingFloats() throws {
        #expect(throws: EncodingError.self) { try CourierJSONEncoder().encode([Double.nan]) }
        var ours = CourierJSONEncoder()
        ours.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let theirs = JSONEncoder()
        theirs.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let values: [Float] = [.infinity, -.infinity, .nan, 1.5]
        #expect(try ours.encode(values) == theirs.encode(values))
    }

    @Test func numbersAreWrittenAsFoundationWritesThem() throws {
        var generator = SystemRandomNumberGenerator()
        var doubles: [Double] = [
            0, -0.0, 1, 0.1, 1e16, 1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 100, 1e21,
            123_456_789_012_345_680,
        ]
        for _ in 0..<2000 {
            let double = Double(bitPattern: generator.next())
            if double.isFinite { doubles.append(double) }
        }
        #expect(try CourierJSONEncoder().encode(doubles) == JSONEncoder().encode(doubles))
        let integers: [Int64] = [.min, -1, 0, 1, .max]
        #expect(try CourierJSONEncoder().encode(integers) == JSONEncoder().encode(integers))
        #expect(try CourierJSONEncoder().encode([UInt64.max]) == JSONEncoder().encode([UInt64.max]))
    }

    struct Deep: Encodable {
        var levels: Int
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            if levels > 1 { try container.encode(Deep(levels: levels - 1)) }
        }
    }

    @Test func nestingLimitMatchesFoundation() throws {
        #expect((try? CourierJSONEncoder().encode(Deep(levels: 511))) != nil)
        #expect(throws: EncodingError.self) { try CourierJSONEncoder().encode(Deep(levels: 512)) }
        #expect((try? JSONEncoder().encode(Deep(levels: 511))) != nil)
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(Deep(levels: 512)) }
    }

    @Test func roundTripsThroughTheDecoder() throws {
        var encoder = CourierJSONEncoder()
        encoder.outputFormatting = [.prettyPrinted]
        let data = try encoder.encode(Self.page)
        #expect(try CourierJSONDecoder().decode(Page.self, from: data) == Self.page)
    }
}

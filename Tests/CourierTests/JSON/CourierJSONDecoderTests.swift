import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// Decoder semantics, each checked against Foundation where the two are meant to agree.
@Suite struct CourierJSONDecoderTests {
    struct Profile: Codable, Equatable {
        var name: String
        var nickname: String?
        var age: Int?
    }

    struct Order: Codable, Equatable {
        struct Line: Codable, Equatable {
            var sku: String
            var price: Double
        }
        var id: Int
        var lines: [Line]
    }

    func path(_ error: any Error) -> [String] { JSONDifferential.path(error) }

    @Test func decodeIfPresentTellsMissingFromNull() throws {
        let decoder = CourierJSONDecoder()
        let missing = try decoder.decode(Profile.self, from: Data(#"{"name":"a"}"#.utf8))
        let null = try decoder.decode(Profile.self, from: Data(#"{"name":"a","nickname":null,"age":null}"#.utf8))
        let present = try decoder.decode(Profile.self, from: Data(#"{"name":"a","nickname":"b","age":3}"#.utf8))
        #expect(missing == Profile(name: "a"))
        #expect(null == Profile(name: "a"))
        #expect(present == Profile(name: "a", nickname: "b", age: 3))
        #expect(throws: DecodingError.self) { try decoder.decode(Profile.self, from: Data(#"{"name":null}"#.utf8)) }
    }

    @Test func nestedErrorsCarryFoundationsCodingPath() throws {
        let data = Data(#"{"id":1,"lines":[{"sku":"a","price":1},{"sku":"b","price":"x"}]}"#.utf8)
        let ours = #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode(Order.self, from: data) }
        let theirs = #expect(throws: DecodingError.self) { try JSONDecoder().decode(Order.self, from: data) }
        #expect(path(ours!) == ["lines", "[1]", "price"])
        #expect(path(ours!) == path(theirs!))
        #expect(JSONDifferential.caseName(ours!) == "typeMismatch")
        let missing = Data(#"{"id":1,"lines":[{"sku":"a"}]}"#.utf8)
        let keyError = #expect(throws: DecodingError.self) {
            try CourierJSONDecoder().decode(Order.self, from: missing)
        }
        #expect(JSONDifferential.caseName(keyError!) == "keyNotFound")
        #expect(path(keyError!) == ["lines", "[0]", "price"])
    }

    class Animal: Codable {
        var legs: Int
        init(legs: Int) { self.legs = legs }
    }

    final class Dog: Animal, @unchecked Sendable {
        // @unchecked: immutable after decoding, only read by this test.
        var name: String
        enum CodingKeys: String, CodingKey { case name }

        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            try super.init(from: container.superDecoder())
        }

        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try super.encode(to: container.superEncoder())
        }
    }

    @Test func superDecoderReadsTheSuperKey() throws {
        let dog = try CourierJSONDecoder().decode(Dog.self, from: Data(#"{"name":"Rex","super":{"legs":4}}"#.utf8))
        #expect(dog.name == "Rex" && dog.legs == 4)
        var encoder = CourierJSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let foundation = JSONEncoder()
        foundation.outputFormatting = .sortedKeys
        #expect(try encoder.encode(dog) == foundation.encode(dog))
        #expect(throws: DecodingError.self) {
            try CourierJSONDecoder().decode(Dog.self, from: Data(#"{"name":"Rex"}"#.utf8))
        }
    }

    struct Small: Codable { var a: Int8 }

    /// Documented difference: Foundation reports number overflow at an empty coding path.
    @Test func integerOverflowIsDataCorruptedAtTheValuesPath() throws {
        let data = Data(#"{"a":300}"#.utf8)
        let ours = #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode(Small.self, from: data) }
        let theirs = #expect(throws: DecodingError.self) { try JSONDecoder().decode(Small.self, from: data) }
        #expect(JSONDifferential.caseName(ours!) == "dataCorrupted")
        #expect(JSONDifferential.caseName(theirs!) == "dataCorrupted")
        #expect(path(ours!) == ["a"])
        #expect(path(theirs!) == [])
    }

    @Test func largeIntegersAndDoublesParseAsFoundationDoes() throws {
        let text = #"[18446744073709551615, 9007199254740993.0, 1e2, -0, 1.0000000000000001]"#
        #expect(
            try CourierJSONDecoder().decode([UInt64].self, from: Data(text.utf8)) == [
                18_446_744_073_709_551_615, 9_007_199_254_740_993, 100, 0, 1,
            ])
        #expect(
            try JSONDecoder().decode([UInt64].self, from: Data(text.utf8)) == [
                18_446_744_073_709_551_615, 9_007_199_254_740_993, 100, 0, 1,
            ])
        #expect(try CourierJSONDecoder().decode([Int64].self, from: Data("[-9223372036854775808]".utf8)) == [Int64.min])
        var generator = SystemRandomNumberGenerator()
        var doubles: [Double] = []
        for _ in 0..<2000 {
            let double = Double(bitPattern: generator.next())
            if double.isFinite { doubles.append(double) }
        }
        let data = try JSONEncoder().encode(doubles)
        let ours = try CourierJSONDecoder().decode([Double].self, from: data)
        #expect(ours == doubles)
        #expect(ours == (try JSONDecoder().decode([Double].self, from: data)))
        let floats = doubles.map { Float($0) }.filter(\.isFinite)
        let floatData = try JSONEncoder().encode(floats)
        #expect(try CourierJSONDecoder().decode([Float].self, from: floatData) == floats)
    }

    /// An integer past 2^53 written with a fraction or an exponent is read through its decimal
    /// digits, as Foundation reads it through `Decimal`: trailing zeros (`.000000`, `00e-2`) are
    /// no overflow, and significant digits past 64 bits are, even after the point.
    @Test func integersPast2To53WithAFractionOrExponentDecodeAsFoundation() throws {
        let texts = [
            "9007199254740993.000000", "100000000000000000000e-2", "9223372036854775807.0",
            "1234567890123456789.000", "-9007199254740993.0000000", "9007199254740993.5", "-9007199254740993.5",
            "9007199254740993e0", "90071992547409930000000e-7", "-9223372036854775808.0", "18446744073709551615.0",
            "4611686018427387903.5", "12345678901234567890.1", "0.5e19",
        ]
        for text in texts {
            let data = Data("[\(text)]".utf8)
            #expect(
                (try? CourierJSONDecoder().decode([Int64].self, from: data))
                    == (try? JSONDecoder().decode([Int64].self, from: data)), "\(text) as Int64")
            #expect(
                (try? CourierJSONDecoder().decode([UInt64].self, from: data))
                    == (try? JSONDecoder().decode([UInt64].self, from: data)), "\(text) as UInt64")
        }
        #expect(
            try CourierJSONDecoder().decode([Int].self, from: Data("[9007199254740993.000000]".utf8)) == [
                9_007_199_254_740_993
            ])
        #expect(
            try CourierJSONDecoder().decode([UInt64].self, from: Data("[9223372036854775807.0]".utf8)) == [
                9_223_372_036_854_775_807
            ])
        #expect(
            try CourierJSONDecoder().decode([Int64].self, from: Data("[100000000000000000000e-2]".utf8)) == [
                1_000_000_000_000_000_000
            ])
    }

    @Test func nestingIsLimitedWithAClearError() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect((try? CourierJSONDecoder().decode(AnyJSON.self, from: Data(ok.utf8))) != nil)
        let error = #expect(throws: DecodingError.self) {
            try CourierJSONDecoder().decode(AnyJSON.self, from: Data(deep.utf8))
        }
        guard case .dataCorrupted(let context) = error else { return #expect(Bool(false)) }
        #expect((context.underlyingError as? JSONSyntaxError)?.reason == "Too many nested arrays or objects")
        let huge = Data(String(repeating: "[", count: 1_000_000).utf8)
        #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode(AnyJSON.self, from: huge) }
    }

    /// Documented differences: Courier is strict RFC 8259 everywhere.
    @Test func strictWhereFoundationIsLenient() throws {
        let trailingComma = Data(#"{"a":[1,2,],}"#.utf8)
        #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode(AnyJSON.self, from: trailingComma) }
        #expect((try? JSONDecoder().decode(AnyJSON.self, from: trailingComma)) != nil)
        let unusedBadString = Data(#"{"b":"\ud800","name":"x"}"#.utf8)
        #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode(Profile.self, from: unusedBadString) }
        #expect((try? JSONDecoder().decode(Profile.self, from: unusedBadString)) != nil)
        #expect(try CourierJSONDecoder().decode([Double].self, from: Data("[0e1]".utf8)) == [0])
        #expect((try? JSONDecoder().decode([Double].self, from: Data("[0e1]".utf8))) == nil)
        let utf16 = Data([0xFF, 0xFE, 0x5B, 0x00, 0x5D, 0x00])  // "[]" in UTF-16LE with BOM
        #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode([Int].self, from: utf16) }
    }

    @Test func stringsUnescapeLikeFoundation() throws {
        let text = #"["a\"b\\c\/d\b\f\n\r\t", "\u00e9\u20ac\ud83d\ude00", "é😀", "\u0000"]"#
        let ours = try CourierJSONDecoder().decode([String].self, from: Data(text.utf8))
        #expect(ours == ["a\"b\\c/d\u{8}\u{c}\n\r\t", "é€😀", "é😀", "\u{0}"])
        #expect(ours == (try JSONDecoder().decode([String].self, from: Data(text.utf8))))
    }

    @Test func duplicateKeysKeepTheFirstValue() throws {
        let data = Data(#"{"name":"first","age":1,"name":"second"}"#.utf8)
        #expect(try CourierJSONDecoder().decode(Profile.self, from: data).name == "first")
        #expect(try JSONDecoder().decode(Profile.self, from: data).name == "first")
        #expect(try CourierJSONDecoder().decode([String: AnyJSON].self, from: data)["name"] == .string("first"))
        // The same key written with an escape, and keys that share a length and end bytes.
        for text in [
            #"{"n\u0061me":"first","age":1,"name":"second"}"#, #"{"nome":0,"name":"first","age":1,"name":"second"}"#,
        ] {
            #expect(try CourierJSONDecoder().decode(Profile.self, from: Data(text.utf8)).name == "first")
            #expect(try JSONDecoder().decode(Profile.self, from: Data(text.utf8)).name == "first")
        }
    }

    struct Event: Codable, Equatable {
        var eventName: String
        var at: Date
        var payload: Data
        var ratio: Double
    }

    @Test func strategiesMatchFoundation() throws {
        let data = Data(#"{"event_name":"x","at":"2024-02-29T12:34:56Z","payload":"AQID","ratio":"NaN"}"#.utf8)
        var ours = CourierJSONDecoder()
        let theirs = JSONDecoder()
        ours.keyDecodingStrategy = .convertFromSnakeCase
        theirs.keyDecodingStrategy = .convertFromSnakeCase
        ours.dateDecodingStrategy = .iso8601
        theirs.dateDecodingStrategy = .iso8601
        ours.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "+", negativeInfinity: "-", nan: "NaN")
        theirs.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "+", negativeInfinity: "-", nan: "NaN")
        let a = try ours.decode(Event.self, from: data)
        let b = try theirs.decode(Event.self, from: data)
        #expect(a.eventName == b.eventName && a.at == b.at && a.payload == Data([1, 2, 3]) && a.ratio.isNaN)

        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        ours.dateDecodingStrategy = .formatted(formatter)
        theirs.dateDecodingStrategy = .formatted(formatter)
        let formatted = Data(#"{"event_name":"x","at":"2024-02-29","payload":"","ratio":1}"#.utf8)
        #expect(try ours.decode(Event.self, from: formatted).at == theirs.decode(Event.self, from: formatted).at)

        ours.dateDecodingStrategy = .millisecondsSince1970
        ours.dataDecodingStrategy = .custom { decoder in
            Data(try decoder.singleValueContainer().decode(String.self).utf8)
        }
        let custom = try ours.decode(
            Event.self, from: Data(#"{"event_name":"x","at":1500,"payload":"hi","ratio":2}"#.utf8))
        #expect(custom.at == Date(timeIntervalSince1970: 1.5) && custom.payload == Data("hi".utf8))
    }

    struct NeedsContext: Decodable {
        var scale: Int
        init(from decoder: any Decoder) throws {
            let base = try decoder.singleValueContainer().decode(Int.self)
            scale = base * (decoder.userInfo[CodingUserInfoKey(rawValue: "factor")!] as? Int ?? 0)
        }
    }

    @Test func userInfoReachesInitFromDecoder() throws {
        var decoder = CourierJSONDecoder()
        decoder.userInfo[CodingUserInfoKey(rawValue: "factor")!] = 10
        #expect(try decoder.decode(NeedsContext.self, from: Data("4".utf8)).scale == 40)
    }

    /// The short-key comparison (overlapping loads) agrees with memcmp at every length and for a
    /// difference at every position.
    @Test func keyBytesCompareLikeMemcmp() {
        var random = SystemRandomNumberGenerator()
        for count in 0...40 {
            let a = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            for position in -1..<count {
                var b = a
                if position >= 0 { b[position] ^= UInt8.random(in: 1...255, using: &random) }
                a.withUnsafeBufferPointer { x in
                    b.withUnsafeBufferPointer { y in
                        let expected = count == 0 || memcmp(x.baseAddress!, y.baseAddress!, count) == 0
                        let ours = x.baseAddress.map { JSONDecoderImpl.bytesEqual($0, y.baseAddress, count) } ?? true
                        #expect(ours == expected, "count \(count), difference at \(position)")
                    }
                }
            }
        }
    }

    final class Escapee: Decodable, @unchecked Sendable {
        // @unchecked: written once during decoding, read after, on one thread.
        nonisolated(unsafe) static var decoder: (any Decoder)?
        init(from decoder: any Decoder) throws { Escapee.decoder = decoder }
    }

    @Test func aDecoderUsedAfterItsCallThrowsInsteadOfReadingFreedBytes() throws {
        _ = try CourierJSONDecoder().decode(Escapee.self, from: Data(#"{"a":1}"#.utf8))
        let escaped = try #require(Escapee.decoder)
        #expect(throws: DecodingError.self) { try escaped.singleValueContainer() }
        Escapee.decoder = nil
    }
}

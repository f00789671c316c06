import Foundation
import PropertyBased
import Testing

@_spi(Fuzzing) @testable import Courier

/// Property-based round trips: decode(encode(x)) == x for every option combination.
@Suite struct FormPropertyTests {
    struct Record: Codable, Equatable, Sendable {
        var text: String
        var number: Int
        var ratio: Double
        var flag: Bool
        var optional: String?
        var list: [String]
        var nested: Nested
        var bytes: Data
    }
    struct Nested: Codable, Equatable, Sendable {
        var name: String
        var values: [Int]
        var deeper: [String: String]
    }

    /// Letters, reserved characters, separators, non-ASCII and emoji.
    static let alphabet = Array("aZ09 -._~!*'();:@&=+$,/?#[]%\"<>\\^`{|}\r\n\téßЖ価😀🇳🇴") as [Character]

    static func makeRecord(
        _ first: (String, Int, Double, Bool), _ second: (String?, [String], Nested, [UInt8])
    ) -> Record {
        Record(
            text: first.0, number: first.1, ratio: first.2, flag: first.3, optional: second.0, list: second.1,
            nested: second.2, bytes: Data(second.3))
    }

    static let encoders: [URLEncodedFormEncoder] = {
        var all: [URLEncodedFormEncoder] = []
        for nesting in [URLEncodedForm.NestingStyle.brackets, .dots] {
            for arrays in [URLEncodedForm.ArrayStyle.brackets, .indexed, .repeated] {
                for bools in [URLEncodedForm.BoolStyle.literal, .numeric] {
                    for spaces in [URLEncodedForm.SpaceStyle.percentEncoded, .plus] {
                        all.append(
                            URLEncodedFormEncoder(nesting: nesting, arrays: arrays, bools: bools, spaces: spaces))
                    }
                }
            }
        }
        return all
    }()

    @Test func recordsRoundTripUnderEveryOption() async {
        let text = Gen<Character?>.element(of: Self.alphabet).map { $0! }.string(of: 0...12)
        let key = Gen.letter.string(of: 1...6)
        let nested = zip(text, Gen.int(in: -1000...1000).array(of: 0...4), zip(key, text).dictionary(ofAtMost: 0...3))
            .map { Nested(name: $0, values: $1, deeper: $2) }
        let first = zip(text, Gen.int(), Gen.double(in: -1e9...1e9), Gen.bool)
        let second = zip(text.optional, text.array(of: 0...4), nested, Gen<UInt8>.value(in: 0...255).array(of: 0...8))
        let records = zip(first, second).map { Self.makeRecord($0, $1) }
        await propertyCheck(count: 200, input: records, Gen.int(in: 0...(Self.encoders.count - 1))) { record, index in
            let encoder = Self.encoders[index]
            let decoder = URLEncodedFormDecoder(nesting: encoder.nesting)
            let bytes = try encoder.encode(record)
            #expect(try decoder.decode(Record.self, from: bytes) == record, "options \(index)")
        }
    }

    @Test func encodingIsDeterministicAndOnlyUnreservedBytesAppear() async {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~%&=+".utf8)
        let text = Gen<Character?>.element(of: Self.alphabet).map { $0! }.string(of: 0...12)
        let records = zip(
            text, text.array(of: 0...4), zip(Gen.letter.string(of: 1...6), text).dictionary(ofAtMost: 0...4)
        )
        .map { Self.makeRecord(($0, 1, 0.5, true), (nil, $1, Nested(name: $0, values: [1], deeper: $2), [])) }
        await propertyCheck(input: records) { record in
            let first = try URLEncodedFormEncoder().encode(record)
            #expect(try URLEncodedFormEncoder().encode(record) == first)
            #expect(first.allSatisfy(allowed.contains))
        }
    }

    @Test func datesRoundTripUnderEachStrategy() async {
        struct Stamp: Codable, Equatable { var at: Date }
        let seconds = Gen.int(in: -2_000_000_000...4_000_000_000).map { Date(timeIntervalSince1970: TimeInterval($0)) }
        await propertyCheck(input: seconds) { date in
            let pairs: [(URLEncodedFormEncoder.DateEncodingStrategy, URLEncodedFormDecoder.DateDecodingStrategy)] = [
                (.deferredToDate, .deferredToDate), (.secondsSince1970, .secondsSince1970),
                (.millisecondsSince1970, .millisecondsSince1970), (.iso8601, .iso8601),
            ]
            for (encoding, decoding) in pairs {
                let bytes = try URLEncodedFormEncoder(dates: encoding).encode(Stamp(at: date))
                #expect(try URLEncodedFormDecoder(dates: decoding).decode(Stamp.self, from: bytes) == Stamp(at: date))
            }
        }
    }
}

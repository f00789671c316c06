import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct URLEncodedFormEncoderTests {
    func encode<T: Encodable>(_ value: T, _ encoder: URLEncodedFormEncoder = URLEncodedFormEncoder()) throws -> String {
        try encoder.encodeQuery(value)
    }

    @Test func defaultsAreBracketsSortedPercentEscapedAndOmitNil() throws {
        #expect(
            try encode(Profile.sample)
                == "active=true&address%5Bcity%5D=Oslo&address%5Bzip%5D=0150&age=30&name=Ann%20Lee&tags%5B%5D=a&tags%5B%5D=b"
        )
    }

    @Test func dotNesting() throws {
        #expect(
            try encode(Profile.sample, URLEncodedFormEncoder(nesting: .dots))
                == "active=true&address.city=Oslo&address.zip=0150&age=30&name=Ann%20Lee&tags%5B%5D=a&tags%5B%5D=b")
    }

    @Test(arguments: [
        (URLEncodedForm.ArrayStyle.brackets, "tags%5B%5D=a&tags%5B%5D=b"),
        (.indexed, "tags%5B0%5D=a&tags%5B1%5D=b"),
        (.repeated, "tags=a&tags=b"),
    ])
    func arrayStyles(style: URLEncodedForm.ArrayStyle, expected: String) throws {
        #expect(try encode(["tags": ["a", "b"]], URLEncodedFormEncoder(arrays: style)) == expected)
    }

    @Test func indexedArraysOfObjectsWithDots() throws {
        let value = ["items": [Address(city: "A", zip: "1"), Address(city: "B", zip: "2")]]
        #expect(
            try encode(value, URLEncodedFormEncoder(nesting: .dots, arrays: .indexed))
                == "items%5B0%5D.city=A&items%5B0%5D.zip=1&items%5B1%5D.city=B&items%5B1%5D.zip=2")
    }

    @Test func boolStyles() throws {
        struct Flags: Encodable { var on = true, off = false }
        #expect(try encode(Flags()) == "off=false&on=true")
        #expect(try encode(Flags(), URLEncodedFormEncoder(bools: .numeric)) == "off=0&on=1")
    }

    @Test func spaceStyles() throws {
        #expect(try encode(["q": "a b+c"]) == "q=a%20b%2Bc")
        #expect(try encode(["q": "a b+c"], URLEncodedFormEncoder(spaces: .plus)) == "q=a+b%2Bc")
    }

    @Test func onlyUnreservedCharactersStayUnescaped() throws {
        let reserved = "!*'();:@&=+$,/?#[]%\"<>\\^`{|} "
        let unreserved = "AZaz09-._~"
        #expect(
            try encode(["k": reserved + unreserved])
                == "k=%21%2A%27%28%29%3B%3A%40%26%3D%2B%24%2C%2F%3F%23%5B%5D%25%22%3C%3E%5C%5E%60%7B%7C%7D%20AZaz09-._~"
        )
        #expect(try encode(["ключ": "é😀"]) == "%D0%BA%D0%BB%D1%8E%D1%87=%C3%A9%F0%9F%98%80")
    }

    @Test func dateStrategies() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        #expect(try encode(["d": date]) == "d=\(date.timeIntervalSinceReferenceDate)")
        #expect(try encode(["d": date], URLEncodedFormEncoder(dates: .secondsSince1970)) == "d=1700000000.5")
        #expect(try encode(["d": date], URLEncodedFormEncoder(dates: .millisecondsSince1970)) == "d=1700000000500")
        #expect(try encode(["d": date], URLEncodedFormEncoder(dates: .iso8601)) == "d=2023-11-14T22%3A13%3A20Z")
        let custom = URLEncodedFormEncoder(dates: .custom { _ in "today" })
        #expect(try encode(["d": date], custom) == "d=today")
    }

    /// A date decoded from a server can hold anything: on the old code 1e300 s (or infinity)
    /// trapped converting to 64-bit milliseconds.
    @Test(arguments: [1e300, -1e300, .infinity, -.infinity, .nan, 9.3e15, 253_402_300_800])
    func datesAStrategyCannotWriteAreEncodingErrors(seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        let strategies: [URLEncodedFormEncoder.DateEncodingStrategy] = [
            .deferredToDate, .secondsSince1970, .millisecondsSince1970, .iso8601,
        ]
        for strategy in strategies {
            let writable =
                switch strategy {
                case .millisecondsSince1970: seconds.isFinite && abs(seconds * 1000) < 9.2e18
                case .iso8601: HTTPDateFormat.representableSeconds.contains(seconds)
                default: seconds.isFinite
                }
            do {
                let text = try encode(["d": date], URLEncodedFormEncoder(dates: strategy))
                #expect(writable, "\(strategy): \(seconds) s written as \(text)")
            } catch let error as CourierError {
                #expect(!writable, "\(strategy): \(error)")
                #expect(error.code == .encoding, "\(strategy): \(error)")
            }
        }
        #expect(
            try encode(["d": Date(timeIntervalSince1970: 253_402_300_799)], URLEncodedFormEncoder(dates: .iso8601))
                == "d=9999-12-31T23%3A59%3A59Z")
    }

    @Test func dataIsBase64OrCustom() throws {
        let data = Data([0xFB, 0xFF, 0x00])
        #expect(try encode(["b": data]) == "b=%2B%2F8A")
        let hex = URLEncodedFormEncoder(data: .custom { $0.map { String(format: "%02x", $0) }.joined() })
        #expect(try encode(["b": data], hex) == "b=fbff00")
    }

    @Test func keyOrdering() throws {
        #expect(
            try encode(Profile.sample, URLEncodedFormEncoder(keyOrdering: .encodingOrder))
                == "name=Ann%20Lee&age=30&tags%5B%5D=a&tags%5B%5D=b&address%5Bcity%5D=Oslo&address%5Bzip%5D=0150&active=true"
        )
        // A dictionary's iteration order varies between runs; sorted output does not.
        let dictionary = Dictionary(uniqueKeysWithValues: (0..<50).map { ("k\($0)", $0) })
        let expected = (0..<50).map { "k\($0)" }.sorted().map { "\($0)=\($0.dropFirst())" }.joined(separator: "&")
        #expect(try encode(dictionary) == expected)
    }

    @Test func nilAndEmptyValuesAreOmitted() throws {
        struct Sparse: Encodable {
            var a: Int? = nil
            var b: [Int] = []
            var c: [String: Int] = [:]
            var d = ""
        }
        #expect(try encode(Sparse()) == "d=")
        #expect(try encode(["a": 1, "b": nil] as [String: Int?]) == "a=1")
        #expect(try encode(Optional<Profile>.none).isEmpty)
    }

    @Test func numbersURLsAndDecimals() throws {
        struct Numbers: Encodable {
            var i8: Int8 = -8, u64 = UInt64.max, d = 0.1, f: Float = 1.5
            var url = URL(string: "https://example.com/a?b=c")!
            var decimal = Decimal(string: "12.34")!
        }
        #expect(
            try encode(Numbers())
                == "d=0.1&decimal=12.34&f=1.5&i8=-8&u64=18446744073709551615&url=https%3A%2F%2Fexample.com%2Fa%3Fb%3Dc")
    }

    @Test func topLevelMustBeKeyed() throws {
        let error = thrownError { _ = try URLEncodedFormEncoder().encode([1, 2]) }
        #expect(error?.code == .encoding)
        #expect(error?.message.contains("keyed") == true)
    }

    @Test func ambiguousKeysAreRefused() throws {
        #expect(thrownError { _ = try encode(["a[b]": 1]) }?.code == .encoding)
        #expect(thrownError { _ = try encode(["": 1]) }?.code == .encoding)
        #expect(thrownError { _ = try encode(["a.b": 1], URLEncodedFormEncoder(nesting: .dots)) }?.code == .encoding)
        #expect(try encode(["a.b": 1]) == "a.b=1")
    }

    @Test func nonFiniteNumbersAreRefusedWithTheirPath() throws {
        let error = thrownError { _ = try encode(["outer": ["x": Double.nan]]) }
        #expect(error?.code == .encoding)
        #expect(error?.codingPath == "outer.x")
    }

    @Test func filesNeedMultipart() throws {
        let error = thrownError { _ = try encode(["f": MultipartFormData.File(path: "/tmp/x")]) }
        #expect(error?.code == .encoding)
        #expect(error?.message.contains("multipart") == true)
    }

    @Test func customEncodeWithNestedAndSuperEncoders() throws {
        struct Custom: Encodable {
            enum Keys: String, CodingKey { case a, list, parent }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .a)
                try nested.encode(1, forKey: .a)
                var list = container.nestedUnkeyedContainer(forKey: .list)
                try list.encode(true)
                var inner = list.nestedUnkeyedContainer()
                try inner.encode("x")
                try "p".encode(to: container.superEncoder(forKey: .parent))
            }
        }
        #expect(
            try encode(Custom(), URLEncodedFormEncoder(arrays: .indexed))
                == "a%5Ba%5D=1&list%5B0%5D=true&list%5B1%5D%5B0%5D=x&parent=p")
    }
}

@Suite struct FormGoldenTests {
    struct Order: Encodable {
        var customer = "Zoë Ça'va & Co."
        var note = "50% off! (today) — 価格 🍕🇳🇴"
        var items = [Item(sku: "A/1", qty: 2), Item(sku: "B?2#", qty: 1)]
        var flags = ["gift": true, "express": false]
        var tags = ["x y", "emoji 😀", "a+b=c"]
        var empty: String? = nil
    }
    struct Item: Encodable {
        var sku: String
        var qty: Int
    }

    @Test func defaultOptions() throws {
        try Golden.check(try URLEncodedFormEncoder(arrays: .indexed).encode(Order()), "form-default-indexed.txt")
    }

    @Test func dotsPlusNumericBools() throws {
        let encoder = URLEncodedFormEncoder(nesting: .dots, arrays: .indexed, bools: .numeric, spaces: .plus)
        try Golden.check(try encoder.encode(Order()), "form-dots-plus-numeric.txt")
    }

    @Test func bracketsAndRepeated() throws {
        struct Flat: Encodable {
            var q = "Straße & \"quotes\" <tag>"
            var ids = [3, 1, 2]
            var labels = ["ä", "😀", "[x]"]
        }
        try Golden.check(try URLEncodedFormEncoder().encode(Flat()), "form-brackets.txt")
        try Golden.check(try URLEncodedFormEncoder(arrays: .repeated).encode(Flat()), "form-repeated.txt")
    }
}

import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct URLEncodedFormDecoderTests {
    let decoder = URLEncodedFormDecoder()

    @Test(arguments: [
        "active=true&address%5Bcity%5D=Oslo&address%5Bzip%5D=0150&age=30&name=Ann%20Lee&tags%5B%5D=a&tags%5B%5D=b",
        "?name=Ann+Lee&age=30&tags[0]=a&tags[1]=b&address[city]=Oslo&address[zip]=0150&active=1",
        "tags=a&tags=b&name=Ann%20Lee&age=30&address[zip]=0150&address[city]=Oslo&active=true&&",
        "tags[1]=b&tags[0]=a&name=Ann Lee&age=30&address[zip]=0150&address[city]=Oslo&active=true",
    ])
    func readsEveryStyle(query: String) throws {
        #expect(try decoder.decode(Profile.self, fromQuery: query) == .sample)
    }

    @Test func dotNesting() throws {
        let dots = URLEncodedFormDecoder(nesting: .dots)
        let query = "name=Ann%20Lee&age=30&tags=a&tags=b&address.city=Oslo&address.zip=0150&active=true"
        #expect(try dots.decode(Profile.self, fromQuery: query) == .sample)
        // Without dot nesting the dotted key is just a name.
        #expect(try decoder.decode([String: String].self, fromQuery: "a.b=1") == ["a.b": "1"])
    }

    @Test func bools() throws {
        struct Flags: Decodable, Equatable { var a, b, c, d: Bool }
        #expect(
            try decoder.decode(Flags.self, fromQuery: "a=true&b=1&c=false&d=0")
                == Flags(a: true, b: true, c: false, d: false))
        let error = thrownError { _ = try decoder.decode(Flags.self, fromQuery: "a=yes&b=1&c=0&d=0") }
        #expect(error?.code == .decoding)
        #expect(error?.codingPath == "a")
    }

    @Test func percentDecodingIsLenient() throws {
        let value = try decoder.decode([String: String].self, fromQuery: "a=100%&b=%zz&c=%E2%82%AC&d=%2B+")
        #expect(value == ["a": "100%", "b": "%zz", "c": "€", "d": "+ "])
        #expect(try decoder.decode([String: String].self, fromQuery: "flag&=x&e=") == ["flag": "", "e": ""])
    }

    struct Stamp: Decodable { var d: Date }

    func decode(_ text: String, _ strategy: URLEncodedFormDecoder.DateDecodingStrategy) throws -> Date {
        let decoder = URLEncodedFormDecoder(dates: strategy)
        let stamp = try decoder.decode(Stamp.self, fromQuery: "d=" + text)
        return stamp.d
    }

    @Test func dateStrategies() throws {
        let expected = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(try decode("\(expected.timeIntervalSinceReferenceDate)", .deferredToDate) == expected)
        #expect(try decode("1700000000", .secondsSince1970) == expected)
        #expect(try decode("1700000000000", .millisecondsSince1970) == expected)
        #expect(try decode("2023-11-14T22:13:20Z", .iso8601) == expected)
        #expect(try decode("2023-11-14T22:13:20.250Z", .iso8601) == expected.addingTimeInterval(0.25))
        #expect(try decode("x", .custom { _ in expected }) == expected)
        let error = thrownError { _ = try decode("yesterday", .iso8601) }
        #expect(error?.code == .decoding)
        #expect(error?.codingPath == "d")
    }

    @Test func dataBase64AndCustom() throws {
        struct Blob: Decodable { var b: Data }
        #expect(try decoder.decode(Blob.self, fromQuery: "b=%2B%2F8A").b == Data([0xFB, 0xFF, 0x00]))
        let custom = URLEncodedFormDecoder(data: .custom { Data($0.utf8) })
        #expect(try custom.decode(Blob.self, fromQuery: "b=hi").b == Data("hi".utf8))
        #expect(thrownError { _ = try decoder.decode(Blob.self, fromQuery: "b=!!") }?.codingPath == "b")
    }

    @Test func railsStyleArraysOfObjects() throws {
        struct List: Decodable, Equatable { var items: [Address] }
        let query = "items[][city]=A&items[][zip]=1&items[][city]=B&items[][zip]=2"
        #expect(
            try decoder.decode(List.self, fromQuery: query)
                == List(items: [Address(city: "A", zip: "1"), Address(city: "B", zip: "2")]))
    }

    @Test func absentKeysReadAsEmptyContainers() throws {
        struct Holder: Codable, Equatable {
            var list: [Int]
            var map: [String: Int]
            var inner: Inner
            struct Inner: Codable, Equatable { var x: String? }
        }
        #expect(try decoder.decode(Holder.self, from: Data()) == Holder(list: [], map: [:], inner: .init(x: nil)))
    }

    @Test func errorsCarryTheCodingPath() throws {
        let mismatch = thrownError { _ = try decoder.decode(Profile.self, fromQuery: "name=a&age=old") }
        #expect(mismatch?.code == .decoding)
        #expect(mismatch?.codingPath == "age")
        #expect(mismatch?.underlying is DecodingError)

        let missing = thrownError {
            _ = try decoder.decode(Profile.self, fromQuery: "name=a&age=1&active=1&tags[]=x&address[city]=Oslo")
        }
        #expect(missing?.codingPath == "address.zip")

        let twice = thrownError { _ = try decoder.decode([String: Int].self, fromQuery: "a=1&a=2") }
        #expect(twice?.codingPath == "a")
        #expect(twice?.message.contains("expected one value, found 2") == true)

        let notArray = thrownError { _ = try decoder.decode([String: [Int]].self, fromQuery: "a[x]=1") }
        #expect(notArray?.codingPath == "a")

        let notKeyed = thrownError { _ = try decoder.decode([String: Address].self, fromQuery: "a=1") }
        #expect(notKeyed?.codingPath == "a")
    }

    @Test func integerKeyedDictionariesAndNestedArrays() throws {
        #expect(
            try decoder.decode([String: [Int: String]].self, fromQuery: "m[10]=a&m[2]=b") == ["m": [10: "a", 2: "b"]])
        #expect(
            try decoder.decode([String: [[Int]]].self, fromQuery: "g[1][0]=3&g[0][1]=2&g[0][0]=1") == [
                "g": [[1, 2], [3]]
            ])
        let value = ["g": [[1, 2], [3]]]
        let encoded = try URLEncodedFormEncoder(arrays: .indexed).encode(value)
        #expect(try decoder.decode([String: [[Int]]].self, from: encoded) == value)
    }

    @Test func malformedKeysAreLiteralNames() throws {
        #expect(try decoder.decode([String: String].self, fromQuery: "a[b=1&[x]=2") == ["a[b": "1", "[x]": "2"])
    }

    @Test func formResponseSerializer() throws {
        let context = makeContext(contentType: "application/x-www-form-urlencoded", body: "city=Oslo&zip=0150")
        #expect(
            try ResponsePipeline().process(context, with: .form(Address.self)) == Address(city: "Oslo", zip: "0150"))
        let bad = thrownError {
            _ = try DecodableResponseSerializer<Profile>.form(Profile.self).serialize(context)
        }
        #expect(bad?.code == .decoding)
        #expect(bad?.response?.status == .ok)
    }
}

@Suite struct FormInheritanceTests {
    class Base: Codable {
        var id = 1
    }
    final class Child: Base, @unchecked Sendable {
        // @unchecked: immutable after init in this test.
        var name = "c"
        enum Keys: String, CodingKey { case name }
        override init() { super.init() }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            name = try container.decode(String.self, forKey: .name)
            try super.init(from: container.superDecoder())
        }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(name, forKey: .name)
            try super.encode(to: container.superEncoder())
        }
    }

    @Test func superEncoderAndDecoderUseASuperKey() throws {
        let child = Child()
        child.id = 7
        child.name = "x"
        let bytes = try URLEncodedFormEncoder().encode(child)
        #expect(String(decoding: bytes, as: UTF8.self) == "name=x&super%5Bid%5D=7")
        let decoded = try URLEncodedFormDecoder().decode(Child.self, from: bytes)
        #expect(decoded.id == 7)
        #expect(decoded.name == "x")
    }
}

@Suite struct FormHostileInputTests {
    @Test func deeplyNestedKeysAreRefusedNotRecursedInto() throws {
        let hostile = "a" + String(repeating: "[a]", count: 100_000) + "=1"
        let error = thrownError { _ = try URLEncodedFormDecoder().decode([String: String].self, fromQuery: hostile) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("deeper than 64") == true)
        let dots = "a" + String(repeating: ".a", count: 100) + "=1"
        #expect(
            thrownError {
                _ = try URLEncodedFormDecoder(nesting: .dots).decode([String: String].self, fromQuery: dots)
            } != nil)
        // 64 levels parse; the only complaint is that the value is not a string.
        let deepest = "a" + String(repeating: "[a]", count: 63) + "=1"
        let mismatch = thrownError {
            _ = try URLEncodedFormDecoder().decode([String: String].self, fromQuery: deepest)
        }
        #expect(mismatch?.codingPath == "a")
        #expect(mismatch?.message.contains("deeper") == false)
    }

    @Test func binaryGarbageDecodesOrFailsCleanly() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let bytes = Data((0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) })
            do {
                _ = try URLEncodedFormDecoder().decode([String: String].self, from: bytes)
            } catch let error as CourierError {
                #expect(error.code == .decoding)
            }
        }
    }
}

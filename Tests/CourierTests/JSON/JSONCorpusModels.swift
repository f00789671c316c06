import Foundation

// Model types the differential corpus is decoded into. Between them they use every part of
// the Codable API: synthesized and hand-written conformances, optionals, nested and super
// containers, enums with associated values, Foundation's special types.

struct Feed: Codable, Equatable {
    struct Item: Codable, Equatable {
        var id: Int
        var name: String
        var price: Double
        var tags: [String]
        var available: Bool
    }
    var status: String
    var count: Int
    var items: [Item]
}

struct LenientFeed: Codable, Equatable {
    struct Item: Codable, Equatable {
        var id: Int?
        var name: String?
        var price: Float?
        var tags: [String]?
    }
    var status: String?
    var count: Int64?
    var items: [Item?]?
}

struct UserProfile: Codable, Equatable {
    struct Address: Codable, Equatable {
        var streetName: String
        var zipCode: String
        var geo: [Double]
    }
    var id: Int64
    var login: String
    var displayName: String?
    var avatarUrl: URL?
    var followers: UInt32
    var createdAt: Date
    var lastSeen: Date?
    var balance: Decimal
    var flags: [String: Bool]
    var address: Address?
}

struct Numbers: Codable, Equatable {
    var i8: Int8?
    var u8: UInt8?
    var i: Int?
    var u64: UInt64?
    var f: Float?
    var d: Double?
    var list: [Double]?
    var flist: [Float]?
    var amounts: [Decimal]?
}

struct Strings: Codable, Equatable {
    var text: String
    var list: [String]
}

enum Event: Codable, Equatable {
    case click(x: Int, y: Int)
    case key(String)
    case scroll
}

/// Polymorphic decoding by a `type` discriminator, with `superDecoder` for a base part.
struct Shapes: Codable, Equatable {
    enum Shape: Codable, Equatable {
        case circle(radius: Double, label: String?)
        case rect(w: Int, h: Int)

        enum CodingKeys: String, CodingKey { case type, radius, w, h, `super` }
        struct Base: Codable, Equatable { var label: String }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            switch try container.decode(String.self, forKey: .type) {
            case "circle":
                let label =
                    container.contains(.super) ? try Base(from: try container.superDecoder()).label : nil
                self = .circle(radius: try container.decode(Double.self, forKey: .radius), label: label)
            case "rect":
                self = .rect(
                    w: try container.decode(Int.self, forKey: .w), h: try container.decode(Int.self, forKey: .h))
            default:
                throw DecodingError.dataCorruptedError(
                    forKey: .type, in: container, debugDescription: "unknown shape")
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .circle(let radius, let label):
                try container.encode("circle", forKey: .type)
                try container.encode(radius, forKey: .radius)
                if let label { try Base(label: label).encode(to: container.superEncoder()) }
            case .rect(let w, let h):
                try container.encode("rect", forKey: .type)
                try container.encode(w, forKey: .w)
                try container.encode(h, forKey: .h)
            }
        }
    }
    var shapes: [Shape]
}

/// Hand-written nested containers.
struct Nested: Codable, Equatable {
    var pageNumber: Int
    var pageSize: Int
    var rows: [[Int]]
    var pairs: [String: Int]

    enum Keys: String, CodingKey { case meta, rows, pairs }
    enum MetaKeys: String, CodingKey { case page }
    enum PageKeys: String, CodingKey { case number, size }
    enum PairKeys: String, CodingKey { case k, v }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let meta = try container.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
        let page = try meta.nestedContainer(keyedBy: PageKeys.self, forKey: .page)
        pageNumber = try page.decode(Int.self, forKey: .number)
        pageSize = try page.decode(Int.self, forKey: .size)
        var rowsContainer = try container.nestedUnkeyedContainer(forKey: .rows)
        rows = []
        while !rowsContainer.isAtEnd {
            var row = try rowsContainer.nestedUnkeyedContainer()
            var values: [Int] = []
            while !row.isAtEnd { values.append(try row.decode(Int.self)) }
            rows.append(values)
        }
        var pairsContainer = try container.nestedUnkeyedContainer(forKey: .pairs)
        pairs = [:]
        while !pairsContainer.isAtEnd {
            let pair = try pairsContainer.nestedContainer(keyedBy: PairKeys.self)
            pairs[try pair.decode(String.self, forKey: .k)] = try pair.decode(Int.self, forKey: .v)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var meta = container.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
        var page = meta.nestedContainer(keyedBy: PageKeys.self, forKey: .page)
        try page.encode(pageNumber, forKey: .number)
        try page.encode(pageSize, forKey: .size)
        var rowsContainer = container.nestedUnkeyedContainer(forKey: .rows)
        for row in rows {
            var nested = rowsContainer.nestedUnkeyedContainer()
            for value in row { try nested.encode(value) }
        }
        var pairsContainer = container.nestedUnkeyedContainer(forKey: .pairs)
        for (key, value) in pairs.sorted(by: { $0.key < $1.key }) {
            var pair = pairsContainer.nestedContainer(keyedBy: PairKeys.self)
            try pair.encode(key, forKey: .k)
            try pair.encode(value, forKey: .v)
        }
    }
}

struct GeoJSON: Codable, Equatable {
    struct Feature: Codable, Equatable {
        struct Geometry: Codable, Equatable {
            var type: String
            var coordinates: [Double]
        }
        var type: String
        var properties: [String: String?]
        var geometry: Geometry
    }
    var type: String
    var features: [Feature]
}

struct Blobs: Codable, Equatable {
    var blob: Data
    var optionalBlob: Data?
    var url: URL
}

/// Every model, erased, so the corpus can be crossed with all of them.
struct CorpusModel: Sendable, CustomStringConvertible {
    let description: String
    let compare: @Sendable (Data, JSONDifferential.Configuration) -> JSONDifferential.Verdict

    /// - Parameter comparesPaths: false for types holding dictionaries: which member fails
    ///   first (so the error case and path) then depends on Foundation's hash order, and only
    ///   "both fail" is compared.
    init<T: Codable & Equatable & SendableMetatype>(_ type: T.Type, comparesPaths: Bool = true) {
        description = "\(T.self)"
        compare = { data, configuration in
            JSONDifferential.compare(T.self, data: data, configuration: configuration, comparesPaths: comparesPaths)
        }
    }

    static let all: [CorpusModel] = [
        CorpusModel(AnyJSON.self, comparesPaths: false), CorpusModel(Feed.self), CorpusModel(LenientFeed.self),
        CorpusModel(UserProfile.self, comparesPaths: false), CorpusModel([UserProfile].self, comparesPaths: false),
        CorpusModel(Numbers.self),
        CorpusModel(Strings.self), CorpusModel([Event].self), CorpusModel(Shapes.self), CorpusModel(Nested.self),
        CorpusModel(GeoJSON.self, comparesPaths: false), CorpusModel(Blobs.self),
        CorpusModel([String: [Int]].self, comparesPaths: false), CorpusModel([Int: String].self, comparesPaths: false),
        CorpusModel([[Double]].self), CorpusModel(String.self),
        CorpusModel(Int.self), CorpusModel(Double?.self), CorpusModel([AnyJSON].self),
    ]
}

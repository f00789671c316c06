import Foundation

/// The model every JSON benchmark decodes: a 1 KB body with a status string, a count and ten
/// items, each with an id, a name, a price, a string array and a bool.
public struct Catalog: Codable, Sendable, Equatable {
    /// One item of the catalog.
    public struct Item: Codable, Sendable, Equatable {
        public var id: Int
        public var name: String
        public var price: Double
        public var tags: [String]
        public var inStock: Bool

        public init(id: Int, name: String, price: Double, tags: [String], inStock: Bool) {
            self.id = id
            self.name = name
            self.price = price
            self.tags = tags
            self.inStock = inStock
        }
    }

    public var status: String
    public var count: Int
    public var items: [Item]

    public init(status: String, count: Int, items: [Item]) {
        self.status = status
        self.count = count
        self.items = items
    }

    /// The catalog whose JSON is ``body``.
    public static let sample: Catalog = {
        let names = ["Espresso", "Lungo", "Ristretto", "Cortado", "Flat white"]
        let items = (0..<10).map { index in
            Item(
                id: 1000 + index, name: "\(names[index % names.count]) \(index)",
                price: Double(250 + index * 37) / 100,
                tags: ["coffee", index.isMultiple(of: 2) ? "hot" : "iced", "size-\(index % 3)"],
                inStock: !index.isMultiple(of: 3))
        }
        return Catalog(status: "ok", count: items.count, items: items)
    }()

    /// The JSON of ``sample``, about 1 KB, the body nginx serves and the decoders read.
    public static let body: Data = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try! encoder.encode(sample)  // a fixed value of plain types: cannot fail
    }()
}

/// A form body of the kind an app posts: a handful of flat fields and a short list.
public struct SignUpForm: Codable, Sendable {
    public var username = "jane.appleseed"
    public var email = "jane@example.com"
    public var password = "correct horse battery staple"
    public var age = 34
    public var newsletter = true
    public var interests = ["coffee", "cycling", "swift & c"]
    public var referrer = "https://example.com/landing?campaign=spring"

    public init() {}
}

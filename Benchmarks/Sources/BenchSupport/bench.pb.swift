// The apple/swift-protobuf form of Protos/bench.proto.
//
// Written by hand in exactly the shape protoc-gen-swift 1.39 emits (see swift-protobuf's own
// Sources/SwiftProtobuf/*.pb.swift), because building the protoc-gen-swift plugin takes about
// ten minutes; the runtime work (decodeMessage / traverse over SwiftProtobuf's binary decoder and
// encoder) is the same as with generated code.
import SwiftProtobuf

public struct Courier_Bench_Item: Sendable {
    public var id: Int64 = 0
    public var name: String = String()
    public var price: Double = 0
    public var tags: [String] = []
    public var inStock: Bool = false
    public var unknownFields = SwiftProtobuf.UnknownStorage()
    public init() {}
}

public struct Courier_Bench_Catalog: Sendable {
    public var status: String = String()
    public var count: Int32 = 0
    public var items: [Courier_Bench_Item] = []
    public var unknownFields = SwiftProtobuf.UnknownStorage()
    public init() {}
}

private let _protobuf_package = "courier.bench"

extension Courier_Bench_Item: SwiftProtobuf.Message, SwiftProtobuf._MessageImplementationBase,
    SwiftProtobuf._ProtoNameProviding
{
    public static let protoMessageName: String = _protobuf_package + ".Item"
    public static let _protobuf_nameMap = SwiftProtobuf._NameMap(
        bytecode: "\0\u{1}id\0\u{1}name\0\u{1}price\0\u{1}tags\0\u{3}in_stock\0")

    public mutating func decodeMessage<D: SwiftProtobuf.Decoder>(decoder: inout D) throws {
        while let fieldNumber = try decoder.nextFieldNumber() {
            switch fieldNumber {
            case 1: try { try decoder.decodeSingularInt64Field(value: &self.id) }()
            case 2: try { try decoder.decodeSingularStringField(value: &self.name) }()
            case 3: try { try decoder.decodeSingularDoubleField(value: &self.price) }()
            case 4: try { try decoder.decodeRepeatedStringField(value: &self.tags) }()
            case 5: try { try decoder.decodeSingularBoolField(value: &self.inStock) }()
            default: break
            }
        }
    }

    public func traverse<V: SwiftProtobuf.Visitor>(visitor: inout V) throws {
        if self.id != 0 { try visitor.visitSingularInt64Field(value: self.id, fieldNumber: 1) }
        if !self.name.isEmpty { try visitor.visitSingularStringField(value: self.name, fieldNumber: 2) }
        if self.price.bitPattern != 0 { try visitor.visitSingularDoubleField(value: self.price, fieldNumber: 3) }
        if !self.tags.isEmpty { try visitor.visitRepeatedStringField(value: self.tags, fieldNumber: 4) }
        if self.inStock != false { try visitor.visitSingularBoolField(value: self.inStock, fieldNumber: 5) }
        try unknownFields.traverse(visitor: &visitor)
    }

    public static func == (lhs: Courier_Bench_Item, rhs: Courier_Bench_Item) -> Bool {
        if lhs.id != rhs.id { return false }
        if lhs.name != rhs.name { return false }
        if lhs.price != rhs.price { return false }
        if lhs.tags != rhs.tags { return false }
        if lhs.inStock != rhs.inStock { return false }
        if lhs.unknownFields != rhs.unknownFields { return false }
        return true
    }
}

extension Courier_Bench_Catalog: SwiftProtobuf.Message, SwiftProtobuf._MessageImplementationBase,
    SwiftProtobuf._ProtoNameProviding
{
    public static let protoMessageName: String = _protobuf_package + ".Catalog"
    public static let _protobuf_nameMap = SwiftProtobuf._NameMap(
        bytecode: "\0\u{1}status\0\u{1}count\0\u{1}items\0")

    public mutating func decodeMessage<D: SwiftProtobuf.Decoder>(decoder: inout D) throws {
        while let fieldNumber = try decoder.nextFieldNumber() {
            switch fieldNumber {
            case 1: try { try decoder.decodeSingularStringField(value: &self.status) }()
            case 2: try { try decoder.decodeSingularInt32Field(value: &self.count) }()
            case 3: try { try decoder.decodeRepeatedMessageField(value: &self.items) }()
            default: break
            }
        }
    }

    public func traverse<V: SwiftProtobuf.Visitor>(visitor: inout V) throws {
        if !self.status.isEmpty { try visitor.visitSingularStringField(value: self.status, fieldNumber: 1) }
        if self.count != 0 { try visitor.visitSingularInt32Field(value: self.count, fieldNumber: 2) }
        if !self.items.isEmpty { try visitor.visitRepeatedMessageField(value: self.items, fieldNumber: 3) }
        try unknownFields.traverse(visitor: &visitor)
    }

    public static func == (lhs: Courier_Bench_Catalog, rhs: Courier_Bench_Catalog) -> Bool {
        if lhs.status != rhs.status { return false }
        if lhs.count != rhs.count { return false }
        if lhs.items != rhs.items { return false }
        if lhs.unknownFields != rhs.unknownFields { return false }
        return true
    }
}

extension Catalog {
    /// ``sample`` in protobuf binary form (the same values as ``body``), about 0.6 KB.
    public static let protobufBody: [UInt8] = {
        var message = Courier_Bench_Catalog()
        message.status = sample.status
        message.count = Int32(sample.count)
        message.items = sample.items.map { item in
            var proto = Courier_Bench_Item()
            proto.id = Int64(item.id)
            proto.name = item.name
            proto.price = item.price
            proto.tags = item.tags
            proto.inStock = item.inStock
            return proto
        }
        return try! message.serializedBytes()  // plain fields: serialisation cannot fail
    }()
}

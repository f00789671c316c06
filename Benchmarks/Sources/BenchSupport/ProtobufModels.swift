import CBenchProtos
import CProtobufC
import CourierProtobuf
import Foundation

/// ``Catalog`` read and written by Courier's protobuf bridge through `Codable`.
extension Catalog: ProtobufMessage {
    public static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        cbench_catalog_descriptor().assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
    }
}

/// The same catalog through Courier's fast path (`ProtobufDirectCodable`, fields by number).
public struct DirectCatalog: ProtobufMessage, ProtobufDirectCodable, Sendable, Equatable {
    public struct Item: Codable, ProtobufDirectCodable, Sendable, Equatable {
        public var id: Int64
        public var name: String
        public var price: Double
        public var tags: [String]
        public var inStock: Bool

        public init(protobuf message: ProtobufMessageReader) throws {
            id = try message.int64(1)
            name = try message.string(2)
            price = try message.double(3)
            tags = try message.strings(4)
            inStock = try message.bool(5)
        }

        public func write(protobuf message: inout ProtobufMessageWriter) throws {
            try message.setInt64(1, id)
            try message.setString(2, name)
            try message.setDouble(3, price)
            try message.setStrings(4, tags)
            try message.setBool(5, inStock)
        }
    }

    public static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        Catalog.protobufDescriptor
    }

    public var status: String
    public var count: Int32
    public var items: [Item]

    public init(protobuf message: ProtobufMessageReader) throws {
        status = try message.string(1)
        count = try message.int32(2)
        items = try message.messages(3)
    }

    public func write(protobuf message: inout ProtobufMessageWriter) throws {
        try message.setString(1, status)
        try message.setInt32(2, count)
        try message.setMessages(3, items)
    }
}

import BenchProtoModels
import CBenchProtos
import CProtobufC
import CourierProtobuf
import Foundation
import SwiftProtobuf

/// ``Catalog`` read and written by Courier's protobuf bridge through `Codable`: a hand-written
/// model with no field mapping code.
extension Catalog: ProtobufMessage {
    public static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_bench_Catalog()
    }
}

/// The same catalog as the model `scripts/generate-protos.sh` generates from Protos/bench.proto
/// (a plain struct with `ProtobufDirectCodable` accessors: Courier's fast path).
public typealias GeneratedCatalog = BenchProtoModels.Catalog

extension Catalog {
    /// ``sample`` in protobuf binary form (the same values as ``body``), 491 bytes, serialized by
    /// apple/swift-protobuf.
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

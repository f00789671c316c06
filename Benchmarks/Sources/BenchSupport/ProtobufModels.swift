import BenchProtoModels
import CBenchProtos
import CProtobufC
import CourierProtobuf
import Foundation

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

import CourierProtobuf
import CourierProtos
import Foundation
import FuzzSupport

// protobuf bytes are server input. For several message shapes (scalars of every kind,
// packed/unpacked repeated fields, maps, oneofs with proto3 optionals, proto2 required and
// defaults, a nested demo feed): decoding either yields a model or throws, never traps or
// leaks a C message; a model that decoded encodes again, and those bytes decode again.
//
// Input layout: 1 byte choosing the message type, then the wire bytes.

func roundTrip<T: ProtobufMessage>(_ type: T.Type, _ data: Data) {
    guard let value = try? ProtobufDecoder().decode(T.self, from: data) else { return }
    guard let encoded = try? ProtobufEncoder().encode(value) else { return }
    do {
        _ = try ProtobufDecoder().decode(T.self, from: encoded)
    } catch {
        fatalError("\(T.self) decoded, encoded, and its own encoding failed to decode: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProtobuf(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data: data, size: size)
    let which = input.choice(7)
    let body = Data(input.rest())
    switch which {
    case 0: roundTrip(Scalars.self, body)
    case 1: roundTrip(Repeated.self, body)
    case 2: roundTrip(Maps.self, body)
    case 3: roundTrip(Choice.self, body)
    case 4: roundTrip(Legacy.self, body)
    case 5: roundTrip(UserProfile.self, body)
    default: roundTrip(Feed.self, body)
    }
    return 0
}

// The models of Tests/CourierProtobufTests/TestModels.swift for the messages in Protos/.
enum Color: Int32, ProtobufEnum, Equatable {
    case unspecified = 0, red, green, blue
    static var unrecognized: Color? { .unspecified }
}

/// The same enum without a fallback: unknown numbers fail to decode.
enum StrictColor: Int32, Codable, Equatable {
    case unspecified = 0, red, green, blue
}

struct Point: Codable, Equatable {
    var x: Int32 = 0
    var y: Int32 = 0
    var label = ""
}

struct Scalars: ProtobufMessage, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Scalars()
    }
    var int32Value: Int32 = 0
    var int64Value: Int64 = 0
    var uint32Value: UInt32 = 0
    var uint64Value: UInt64 = 0
    var sint32Value: Int32 = 0
    var sint64Value: Int64 = 0
    var fixed32Value: UInt32 = 0
    var fixed64Value: UInt64 = 0
    var sfixed32Value: Int32 = 0
    var sfixed64Value: Int64 = 0
    var floatValue: Float = 0
    var doubleValue: Double = 0
    var boolValue = false
    var stringValue = ""
    var bytesValue = Data()
    var color = Color.unspecified
}

struct StrictScalars: ProtobufMessage {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Scalars()
    }
    var color = StrictColor.unspecified
}

struct Repeated: ProtobufMessage, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Repeated()
    }
    var packedInt32: [Int32] = []
    var packedSint64: [Int64] = []
    var packedDouble: [Double] = []
    var packedBool: [Bool] = []
    var packedFixed32: [UInt32] = []
    var packedColors: [Color] = []
    var unpackedInt32: [Int32] = []
    var unpackedFloat: [Float] = []
    var unpackedUint64: [UInt64] = []
    var strings: [String] = []
    var blobs: [Data] = []
    var points: [Point] = []
}

struct Maps: ProtobufMessage, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Maps()
    }
    var counts: [String: Int32] = [:]
    var pointsById: [Int64: Point] = [:]
    var names: [UInt32: String] = [:]
    var colors: [String: Color] = [:]
}

/// The oneof `value` as optional properties, at most one set; proto3 `optional` as Optionals.
struct Choice: ProtobufMessage, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Choice()
    }
    var number: Int32?
    var text: String?
    var point: Point?
    var color: Color?
    var origin: Point?
    var maybeCount: Int32?
    var maybeName: String?
    var maybeRatio: Double?
    var maybeColor: Color?
    var tail: Int64 = 0
}

struct Legacy: ProtobufMessage, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Legacy()
    }
    enum Level: Int32, Codable, Equatable { case low = 1, medium, high }
    struct Child: Codable, Equatable {
        var serial: Int64
        var note: String?
    }
    var id: Int32
    var name: String
    var retries: Int32 = 0
    var greeting: String?
    var ratio: Double = 0
    var enabled = false
    var level: Level?
    var token: Data?
    var big: UInt64 = 0
    var values: [Int32] = []
    var child: Child?
}

enum Tier: Int32, ProtobufEnum, Equatable {
    case free = 0, plus, pro
}

struct Address: Codable, Equatable {
    var street = ""
    var city = ""
    var countryCode = ""
    var postalCode = ""
}

struct UserProfile: ProtobufMessage, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_demo_UserProfile()
    }
    var userId: Int64 = 0
    var displayName = ""
    var email = ""
    var tier = Tier.free
    var verified = false
    var createdAt: Int64 = 0
    var rating: Double = 0
    var address: Address?
    var interests: [String] = []
    var badgeIds: [Int32] = []
    var stats: [String: Int32] = [:]
    var bio: String?
}

struct Post: Codable, Equatable {
    var postId: Int64 = 0
    var authorId: Int64 = 0
    var title = ""
    var body = ""
    var publishedAt: Int64 = 0
    var likes: UInt32 = 0
    var tags: [String] = []
}

struct Feed: ProtobufMessage, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_demo_Feed()
    }
    var posts: [Post] = []
    var nextCursor = ""
    var viewer: UserProfile?
}

import CourierProtobuf
import CourierProtos
import Foundation

// Plain Swift models for the messages in Protos/courier/test and Protos/courier/demo.

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

/// A message that contains itself, on the Codable path: `@Indirect` boxes the singular field.
struct Category: ProtobufMessage, Equatable, Sendable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Category()
    }
    var name = ""
    @Indirect var parent: Category?
    var children: [Category] = []
    var related: [String: Category] = [:]
}

/// Recursion through another message and a oneof.
struct Expr: ProtobufMessage, Equatable, Sendable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Expr()
    }
    struct Binary: Codable, Equatable, Sendable {
        var op = ""
        @Indirect var left: Expr?
        @Indirect var right: Expr?
    }
    var literal: Int64?
    var binary: Binary?
}

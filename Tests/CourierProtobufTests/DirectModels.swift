import CourierProtobuf
import CourierProtos
import Foundation

// The demo messages as ProtobufDirectCodable models: plain structs plus accessors by field
// number (what a generator would emit), read without Codable.

struct DirectAddress: ProtobufDirectCodable, Codable, Equatable {
    var street = "", city = "", countryCode = "", postalCode = ""

    init(street: String = "", city: String = "", countryCode: String = "", postalCode: String = "") {
        (self.street, self.city, self.countryCode, self.postalCode) = (street, city, countryCode, postalCode)
    }
    init(protobuf message: ProtobufMessageReader) throws {
        street = try message.string(1)
        city = try message.string(2)
        countryCode = try message.string(3)
        postalCode = try message.string(4)
    }
    func write(protobuf message: inout ProtobufMessageWriter) throws {
        try message.setString(1, street)
        try message.setString(2, city)
        try message.setString(3, countryCode)
        try message.setString(4, postalCode)
    }
}

struct DirectUserProfile: ProtobufMessage, ProtobufDirectCodable, Equatable {
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
    var address: DirectAddress?
    var interests: [String] = []
    var badgeIds: [Int32] = []
    var stats: [String: Int32] = [:]
    var bio: String?

    init() {}
    init(protobuf message: ProtobufMessageReader) throws {
        userId = try message.int64(1)
        displayName = try message.string(2)
        email = try message.string(3)
        tier = try message.enumeration(4)
        verified = try message.bool(5)
        createdAt = try message.int64(6)
        rating = try message.double(7)
        address = try message.message(8)
        interests = try message.strings(9)
        badgeIds = try message.int32s(10)
        stats = try message.stringInt32Map(11)
        bio = try message.has(12) ? message.string(12) : nil
    }
    func write(protobuf message: inout ProtobufMessageWriter) throws {
        try message.setInt64(1, userId)
        try message.setString(2, displayName)
        try message.setString(3, email)
        try message.setEnumeration(4, tier)
        try message.setBool(5, verified)
        try message.setInt64(6, createdAt)
        try message.setDouble(7, rating)
        if let address { try message.setMessage(8, address) }
        try message.setStrings(9, interests)
        try message.setInt32s(10, badgeIds)
        try message.setStringInt32Map(11, stats)
        if let bio { try message.setString(12, bio) }
    }
}

struct DirectPost: ProtobufDirectCodable, Codable, Equatable {
    var postId: Int64 = 0
    var authorId: Int64 = 0
    var title = ""
    var body = ""
    var publishedAt: Int64 = 0
    var likes: UInt32 = 0
    var tags: [String] = []

    init(protobuf message: ProtobufMessageReader) throws {
        postId = try message.int64(1)
        authorId = try message.int64(2)
        title = try message.string(3)
        body = try message.string(4)
        publishedAt = try message.int64(5)
        likes = try message.uint32(6)
        tags = try message.strings(7)
    }
    func write(protobuf message: inout ProtobufMessageWriter) throws {
        try message.setInt64(1, postId)
        try message.setInt64(2, authorId)
        try message.setString(3, title)
        try message.setString(4, body)
        try message.setInt64(5, publishedAt)
        try message.setUInt32(6, likes)
        try message.setStrings(7, tags)
    }
}

struct DirectFeed: ProtobufMessage, ProtobufDirectCodable, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_demo_Feed()
    }
    var posts: [DirectPost] = []
    var nextCursor = ""
    var viewer: DirectUserProfile?

    init(protobuf message: ProtobufMessageReader) throws {
        posts = try message.messages(1)
        nextCursor = try message.string(2)
        viewer = try message.message(3)
    }
    func write(protobuf message: inout ProtobufMessageWriter) throws {
        try message.setMessages(1, posts)
        try message.setString(2, nextCursor)
        if let viewer { try message.setMessage(3, viewer) }
    }
}

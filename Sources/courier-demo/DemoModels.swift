import Courier
import CourierProtobuf
import CourierProtos
import Foundation

// The models of the demo's example API, as an app would declare them.

/// `POST auth/login` body.
struct Credentials: Encodable, Sendable {
    var username: String
    var password: String
}

/// The answer of `auth/login` and `auth/refresh`.
struct Session: Decodable, Sendable {
    var token: String
    var refreshToken: String
    var userId: Int
}

/// `GET users/me`.
struct User: Decodable, Sendable {
    var id: Int
    var name: String
    var email: String
}

/// Sent as a form by `POST users/me/settings`.
struct Settings: Encodable, Sendable {
    var theme: String
    var notifications: Bool
    var language: String
}

/// What the fixture answers to a settings form: the body it received, as it received it.
struct SavedSettings: Decodable, Sendable {
    var saved: Bool
    var contentType: String
    var received: String
}

/// `courier.demo.Tier` in Protos/courier/demo/profile.proto.
enum Tier: Int32, ProtobufEnum, Sendable {
    case free = 0, plus, pro
    static var unrecognized: Tier? { .free }
}

/// `courier.demo.Address`.
struct Address: Codable, Sendable {
    var street = ""
    var city = ""
    var countryCode = ""
    var postalCode = ""
}

/// `courier.demo.UserProfile`, read from `application/x-protobuf` bodies.
struct UserProfile: ProtobufMessage, Sendable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_demo_UserProfile()
    }
    var userId: Int64 = 0
    var displayName = ""
    var email = ""
    var tier = Tier.free
    var verified = false
    var rating: Double = 0
    var address: Address?
    var interests: [String] = []
    var stats: [String: Int32] = [:]
}

/// One post of the feed.
struct Post: Decodable, Sendable {
    var id: Int
    var title: String
}

/// One page of `GET feed?cursor=…&limit=…`.
struct FeedPage: Decodable, Sendable {
    var posts: [Post]
    var nextCursor: String?
}

/// `GET search?q=…`.
struct SearchResult: Decodable, Sendable {
    var query: String
    var hits: Int
}

/// A small answer several endpoints share (`feed/unread`, `feed/trending`, `media/quota`).
struct Counter: Decodable, Sendable {
    var count: Int
}

/// The answer to an avatar upload.
struct UploadReceipt: Decodable, Sendable {
    var bytes: Int
    var url: String
}

/// What an httpbin-style server (`/get`, `/anything`) echoes; fields differ between servers,
/// so each is optional.
struct Echo: Decodable, Sendable {
    var method: String?
    var args: [String: String]?
    var headers: [String: String]?
    /// httpbin: the decoded form fields.
    var form: [String: String]?
    /// Courier's TestServer: the raw body.
    var body: String?
}

import Foundation
import HTTPTypes

/// The request head a service made last for a method and path on a server, without header
/// fields: the path validated and percent-encoded (`RelativePath`), the target composed and
/// the pseudo-header values checked once, not on every call to the same endpoint.
///
/// One entry per service: an app calls the same few endpoints over and over, and a miss
/// costs a comparison of two short strings before the parse it would do anyway. A path that
/// fails validation is not kept (every call with it fails again, with the same error).
final class RequestHeadCache: Sendable {
    /// A reference, so that reading it under the lock copies one pointer, not four values.
    private final class Entry: Sendable {
        init(method: HTTPRequest.Method, path: String, server: BaseURL, head: HTTPRequest) {
            self.method = method
            self.path = path
            self.server = server
            self.head = head
        }

        let method: HTTPRequest.Method
        let path: String
        let server: BaseURL
        let head: HTTPRequest
    }

    private let last = LockedValue<Entry?>(nil)

    init() {}

    /// The head for `method` and `path` on `server` with no header fields.
    /// - Throws: `CourierError.invalidRequest` when the path is unsafe or malformed.
    func head(_ method: HTTPRequest.Method, _ path: String, on server: BaseURL) throws -> HTTPRequest {
        if let entry = last.withLock({ $0 }), Self.same(entry.path, path), entry.method == method,
            Self.same(entry.server.scheme, server.scheme), Self.same(entry.server.authority, server.authority),
            Self.same(entry.server.pathPrefix, server.pathPrefix)
        {
            return entry.head
        }
        let head = server.request(method, try RelativePath(path))
        let entry = Entry(method: method, path: path, server: server, head: head)
        last.withLock { $0 = entry }
        return head
    }

    /// The same bytes: `String`'s `==` finds `é` and `e` + U+0301 equal, whose percent-encoded
    /// paths differ. One `memcmp` (`utf8.elementsEqual` costs ~600 instructions a string).
    static func same(_ one: String, _ other: String) -> Bool {
        var one = one
        var other = other
        return one.withUTF8 { first in
            other.withUTF8 { second in
                first.count == second.count
                    && (first.isEmpty || memcmp(first.baseAddress!, second.baseAddress!, first.count) == 0)
            }
        }
    }
}

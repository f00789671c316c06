import Foundation
import HTTPTypes

/// Checks a request before anything is sent: only http(s), no credentials in the authority,
/// and no CR, LF or NUL anywhere a peer would read them as a line break or terminator.
enum RequestValidation {
    /// - Throws: `CourierError.invalidRequest` naming what is wrong (never a header value).
    static func validate(_ request: HTTPRequest) throws(CourierError) {
        guard let scheme = request.scheme, isHTTPScheme(scheme) else {
            throw CourierError(.invalidRequest, "only http and https URLs are allowed")
        }
        guard let authority = request.authority, !authority.isEmpty else {
            throw CourierError(.invalidRequest, "the request has no host")
        }
        // Over the bytes in place: iterating a string's UTF-8 view costs several times more.
        let hostFault = withBytes(of: authority) { bytes -> String? in
            for byte in bytes {
                switch byte {
                case ...0x20, 0x7F, UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "\\"):
                    return "the host contains a forbidden character"
                case UInt8(ascii: "@"):
                    return "credentials in the URL are not supported; use a header"
                default:
                    continue
                }
            }
            return nil
        }
        if let hostFault { throw CourierError(.invalidRequest, hostFault) }
        let pathIsClean = withBytes(of: request.path ?? "/") { bytes in
            !bytes.contains { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "#") }
        }
        guard pathIsClean else {
            throw CourierError(.invalidRequest, "the path contains a control character, a space or '#'")
        }
        for field in request.headerFields {
            try validate(field)
        }
    }

    /// Whether `scheme` is `http` or `https`, in any case (without lower-casing a copy; no
    /// other character lower-cases to these ASCII letters).
    static func isHTTPScheme(_ scheme: String) -> Bool {
        withBytes(of: scheme) { bytes in
            guard bytes.count == 4 || bytes.count == 5 else { return false }
            guard bytes[0] | 0x20 == UInt8(ascii: "h"), bytes[1] | 0x20 == UInt8(ascii: "t"),
                bytes[2] | 0x20 == UInt8(ascii: "t"), bytes[3] | 0x20 == UInt8(ascii: "p")
            else { return false }
            return bytes.count == 4 || bytes[4] | 0x20 == UInt8(ascii: "s")
        }
    }

    /// `body` over `text`'s UTF-8 bytes in place, as the project reads strings elsewhere.
    private static func withBytes<Result>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        var text = text
        return text.withUTF8(body)
    }

    /// HTTPTypes turns CR, LF and NUL in values into spaces when a field is made from a
    /// string, but a field decoded with Codable keeps its bytes; check them all.
    static func validate(_ field: HTTPField) throws(CourierError) {
        let clean = field.withUnsafeBytesOfValue { bytes in
            !bytes.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 })
        }
        guard clean else {
            throw CourierError(.invalidRequest, "the value of header \(field.name) contains CR, LF or NUL")
        }
    }

    /// Makes a field from raw strings, refusing (rather than repairing) forbidden bytes.
    static func field(name: String, value: String) throws(CourierError) -> HTTPField {
        if name.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) {
            throw CourierError(.invalidRequest, "a header name contains CR, LF or NUL")
        }
        guard let fieldName = HTTPField.Name(name) else {
            throw CourierError(.invalidRequest, "'\(name)' is not a valid header name")
        }
        if value.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) {
            throw CourierError(.invalidRequest, "the value of header \(name) contains CR, LF or NUL")
        }
        return HTTPField(name: fieldName, value: value)
    }
}

extension HTTPRequest {
    /// The absolute URL of the request, when it has a scheme and an authority.
    var absoluteURL: URL? {
        guard let scheme, let authority else { return nil }
        return URL(string: "\(scheme)://\(authority)\(path ?? "/")")
    }

    /// Points the request at `url` (scheme, authority, path and query; the fragment is dropped).
    mutating func setURL(_ url: URL) throws(CourierError) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let scheme = components.scheme, let host = components.percentEncodedHost, !host.isEmpty
        else {
            // Not quoted: a URL a caller got wrong may still carry a token or a password.
            throw CourierError(.invalidRequest, "cannot send a request to a URL without an http(s) scheme and a host")
        }
        if components.percentEncodedUser != nil || components.percentEncodedPassword != nil {
            throw CourierError(.invalidRequest, "credentials in the URL are not supported; use a header")
        }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        self.scheme = scheme.lowercased()
        authority = components.port.map { "\(bracketed):\($0)" } ?? bracketed
        var path = components.percentEncodedPath
        if path.isEmpty { path = "/" }
        if let query = components.percentEncodedQuery { path += "?\(query)" }
        self.path = path
    }
}

/// Scheme, host and port: what must stay the same for credentials to follow a redirect.
struct Origin: Hashable {
    var scheme: String
    var host: String
    var port: Int

    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        self.scheme = scheme
        self.host = host
        port = url.port ?? (scheme == "https" ? 443 : 80)
    }
}

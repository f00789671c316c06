import Foundation
import HTTPTypes

/// Decides where a redirect leads and what the next request looks like. Pure: no I/O.
///
/// Rules (RFC 9110 §15.4, and what browsers and curl do):
/// - 301, 302, 303, 307 and 308 with a `Location` are followed; others are returned as is.
/// - 303 becomes GET (HEAD stays HEAD); 301 and 302 turn a POST into a GET. The body and
///   its content headers are dropped then. 307 and 308 keep the method and the body.
/// - https → http is refused (`.redirect`): a downgrade would expose the request.
/// - When the origin (scheme, host, port) changes, every credential field is removed:
///   Authorization, Cookie, Proxy-Authorization and the names passed as sensitive (the
///   client's `credentialFieldNames`, custom auth headers included, and the request's), and
///   the `RequestSigner`'s fields: a signature is good for its request at the API only, and
///   another origin could replay it there within the timestamp's window.
struct RedirectHandler {
    /// Headers never sent to another origin.
    static let credentialHeaders: Set<HTTPField.Name> = [.authorization, .cookie, .proxyAuthorization]
    /// Those and the signer's: not credentials for the cache's identity (a nonce would make
    /// every signed request a new entry), but never sent to another origin either.
    static let droppedAcrossOrigins = credentialHeaders.union(RequestSigner.fieldNames)
    /// Headers that describe a body, removed with it.
    static let bodyHeaders: [HTTPField.Name] = [.contentType, .contentLength, .contentEncoding, .transferEncoding]

    var sensitiveHeaderNames: Set<HTTPField.Name> = []

    struct Hop {
        var request: HTTPRequest
        var body: RequestBody?
        var url: URL
    }

    /// Whether `response` is a redirect this handler follows (a 301, 302, 303, 307 or 308
    /// with a `Location`), before anything about its target is known.
    static func isRedirect(_ response: HTTPResponse) -> Bool {
        switch response.status.code {
        case 301, 302, 303, 307, 308: response.headerFields[.location] != nil
        default: false
        }
    }

    /// The request to send next, or `nil` when `response` is not a redirect to follow.
    /// - Throws: `CourierError.redirect` for a downgrade, a malformed or non-http(s) location.
    func nextHop(
        after request: HTTPRequest, body: RequestBody?, url: URL, response: HTTPResponse
    ) throws(CourierError) -> Hop? {
        let status = response.status.code
        guard [301, 302, 303, 307, 308].contains(status), let location = response.headerFields[.location] else {
            return nil
        }
        guard let target = URL(string: location, relativeTo: url)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), target.host != nil
        else {
            throw CourierError(.redirect, "the server redirected to an invalid location", response: response)
        }
        guard scheme == "http" || scheme == "https" else {
            throw CourierError(.redirect, "the server redirected to a \(scheme): URL", response: response)
        }
        if url.scheme?.lowercased() == "https", scheme == "http" {
            throw CourierError(.redirect, "refused a redirect from https to http", response: response)
        }
        var next = request
        do {
            try next.setURL(target)
        } catch {
            throw CourierError(.redirect, "invalid redirect: \(error.message)", response: response)
        }
        var nextBody = body
        let becomesGet = status == 303 || ((status == 301 || status == 302) && request.method == .post)
        if becomesGet, request.method != .head {
            next.method = .get
            nextBody = nil
            for name in Self.bodyHeaders { next.headerFields[name] = nil }
        }
        if Origin(url) != Origin(target) {
            for name in Self.droppedAcrossOrigins.union(sensitiveHeaderNames) { next.headerFields[name] = nil }
        }
        return Hop(request: next, body: nextBody, url: target)
    }
}

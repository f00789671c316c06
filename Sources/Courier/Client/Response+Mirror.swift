import Foundation
import HTTPTypes

// What `print`, `dump` and a debugger show of the values a call returns or throws, which apps
// print while they debug: every property, no secret. The default reflection showed the request
// as sent (its Authorization, the fields a `CredentialPart` wrote, a credential in its query)
// and the answer's `Set-Cookie`.

extension Redaction {
    /// Request fields whose values a mirror shows. Every other request field's value is
    /// replaced: a response does not know which fields carried its client's or service's
    /// credential (an `X-User-Id`, a custom session field), so only fields known to hold none
    /// are shown.
    static let plainRequestNames: Set<HTTPField.Name> = [
        .accept, .acceptEncoding, .acceptLanguage, .cacheControl, .contentEncoding, .contentLength, .contentType,
        .ifMatch, .ifModifiedSince, .ifNoneMatch, .ifRange, .ifUnmodifiedSince, .range, .userAgent,
    ]

    /// A request as mirrors show it: method and URL with its query hidden (as the client's
    /// logs show targets), and only the values of `plainRequestNames`.
    static func shown(_ request: HTTPRequest) -> ShownHead {
        let fields = request.headerFields.map { field in
            "\(field.name.rawName): \(plainRequestNames.contains(field.name) ? field.value : marker)"
        }
        return ShownHead(
            line:
                "\(request.method.rawValue) \(target(scheme: request.scheme, authority: request.authority, path: request.path))",
            headerFields: fields)
    }

    /// A response head as mirrors show it: status, and header fields as logs show them.
    static func shown(_ response: HTTPResponse) -> ShownHead {
        ShownHead(
            line: "\(response.status.code) \(response.status.reasonPhrase)",
            headerFields: Redaction.default.redact(response.headerFields))
    }

    /// A URL as mirrors show it: its query hidden.
    static func shown(_ url: URL) -> String { hidingQueries(in: url.absoluteString) }
}

/// A request or response head as a mirror shows it: its first line, and its header fields with
/// secrets replaced.
struct ShownHead: CustomStringConvertible, CustomReflectable {
    let line: String
    let headerFields: [String]

    var description: String { line }

    var customMirror: Mirror {
        Mirror(self, children: ["line": line, "headerFields": headerFields], displayStyle: .struct)
    }
}

extension Response: CustomReflectable {
    /// Every property; the request and response heads as logs show them (`Redaction`).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "value": value, "response": Redaction.shown(response), "body": body,
                "request": Redaction.shown(request),
                "isFromCache": isFromCache, "isStale": isStale, "transferMetrics": transferMetrics,
                "metrics": metrics, "callID": callID,
            ], displayStyle: .struct)
    }
}

extension HTTPClient.Response: CustomReflectable {
    /// Every property; the request and response heads and the URL as logs show them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "head": Redaction.shown(head), "body": body, "metrics": metrics, "request": Redaction.shown(request),
                "answeredURL": Redaction.shown(url), "redirectCount": redirectCount,
                "redirectMetrics": redirectMetrics, "isFromCache": isFromCache, "isStale": isStale,
                "serverOutcome": serverOutcome,
            ], displayStyle: .struct)
    }
}

extension HTTPClient.StreamedResponse: CustomReflectable {
    /// Every property; the request and response heads and the URL as logs show them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "head": Redaction.shown(head), "body": body, "request": Redaction.shown(request),
                "answeredURL": Redaction.shown(url), "redirectCount": redirectCount,
            ], displayStyle: .struct)
    }
}

extension CourierError: CustomReflectable {
    /// Every property; the response head as logs show it (its `Set-Cookie` redacted).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "code": code, "message": message, "underlying": underlying as Any,
                "response": response.map(Redaction.shown) as Any, "body": body as Any,
                "errorModel": errorModel as Any, "codingPath": codingPath as Any, "domainError": domainError as Any,
                "refusalIsRetryable": refusalIsRetryable as Any, "timedOutConnecting": timedOutConnecting,
            ], displayStyle: .struct)
    }
}

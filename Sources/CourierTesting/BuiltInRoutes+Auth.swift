import Foundation
import HTTPTypes

extension BuiltInRoutes {
    // MARK: - Bearer auth

    func bearer(_ request: RecordedRequest) -> ScriptedResponse {
        let authorization = request.header("Authorization") ?? ""
        let prefix = "bearer "
        if authorization.lowercased().hasPrefix(prefix) {
            let token = String(authorization.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
            if !token.isEmpty && (validBearerTokens?.contains(token) ?? true) {
                return .json(["authenticated": true, "token": token])
            }
            var response = ScriptedResponse.json(["authenticated": false, "error": "invalid_token"], status: 401)
            response.headers[.wwwAuthenticate] = "Bearer error=\"invalid_token\""
            return response
        }
        var response = ScriptedResponse.json(["authenticated": false], status: 401)
        response.headers[.wwwAuthenticate] = "Bearer"
        return response
    }

    // MARK: - Caching

    /// `/cache/etag?etag=X&max-age=N`: `ETag: "X"`; `If-None-Match` matching it gives 304.
    func etag(_ request: RecordedRequest) -> ScriptedResponse {
        let tag = "\"\(request.queryValue("etag") ?? "v1")\""
        var headers: HTTPFields = [.eTag: tag]
        if let maxAge = request.queryValue("max-age") {
            headers[.cacheControl] = "max-age=\(maxAge)"
        } else {
            headers[.cacheControl] = "no-cache"
        }
        if let match = request.header("If-None-Match") {
            let candidates = match.split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "W/", with: "")
            }
            if candidates.contains("*") || candidates.contains(tag) {
                return .status(304, headers: headers)
            }
        }
        var response = ScriptedResponse.json(["etag": tag, "path": request.path])
        response.headers.append(contentsOf: headers)
        return response
    }

    /// `/cache/last-modified?date=<HTTP date>&max-age=N`: `If-Modified-Since` not before it gives 304.
    func lastModified(_ request: RecordedRequest) -> ScriptedResponse {
        let dateText = request.queryValue("date") ?? "Wed, 21 Oct 2015 07:28:00 GMT"
        guard let modified = HTTPDate.parse(dateText) else { return .json(["error": "bad date"], status: 400) }
        var headers: HTTPFields = [.lastModified: dateText]
        if let maxAge = request.queryValue("max-age") {
            headers[.cacheControl] = "max-age=\(maxAge)"
        } else {
            headers[.cacheControl] = "no-cache"
        }
        if let since = request.header("If-Modified-Since").flatMap(HTTPDate.parse), since >= modified {
            return .status(304, headers: headers)
        }
        var response = ScriptedResponse.json(["lastModified": dateText, "path": request.path])
        response.headers.append(contentsOf: headers)
        return response
    }

    /// `/response-headers?Name=value&…`: each query item becomes a response header; the body lists them.
    func responseHeaders(_ request: RecordedRequest) -> ScriptedResponse {
        var response = ScriptedResponse.json(Dictionary(request.queryItems, uniquingKeysWith: { a, b in a + ", " + b }))
        for (name, value) in request.queryItems {
            guard let fieldName = HTTPField.Name(name) else { continue }
            if fieldName == .contentType || fieldName == .date { response.headers[fieldName] = nil }
            response.headers.append(HTTPField(name: fieldName, value: value))
        }
        return response
    }

    // MARK: - Faults

    /// The responses of `/fault/{name}`; `nil` for an unknown name.
    static func fault(named name: String, request: RecordedRequest) -> ScriptedResponse? {
        let body = TestServer.bytePattern(count: 100_000)
        let fault: Fault
        switch name {
        case "reset-headers": fault = .resetDuringHeaders
        case "reset-body": fault = .resetDuringBody
        case "close-body", "drop-mid-body": fault = .closeDuringBody
        case "no-response": fault = .closeWithoutResponse
        case "stall-after-headers": fault = .stallAfterHeaders
        case "trickle":
            let bytes = request.queryValue("bytes").flatMap(Int.init) ?? 1
            let interval = request.queryValue("intervalMs").flatMap(Int.init) ?? 100
            let total = request.queryValue("total").flatMap(Int.init) ?? 1000
            return ScriptedResponse(
                body: TestServer.bytePattern(count: max(1, total)),
                fault: .trickle(bytes: max(1, bytes), interval: .milliseconds(max(0, interval))))
        case "truncated-chunked": fault = .truncatedChunked
        case "bad-status-line": fault = .badStatusLine
        case "bad-header-bytes": fault = .badHeaderBytes
        case "content-length-larger": fault = .contentLengthLarger(extra: 1000)
        case "content-length-smaller": fault = .contentLengthSmaller
        case "huge-headers":
            let size = request.queryValue("size").flatMap(Int.init) ?? 1024 * 1024
            return .json(["hugeHeaders": size]).withFault(.hugeHeaders(size: max(0, size)))
        case "endless": fault = .endless
        default: return hostile(named: name, request: request)
        }
        return ScriptedResponse(headers: [.contentType: "application/octet-stream"], body: body, fault: fault)
    }
}

extension ScriptedResponse {
    /// Returns a copy that carries `fault`.
    public func withFault(_ fault: Fault) -> ScriptedResponse {
        var copy = self
        copy.fault = fault
        return copy
    }
}

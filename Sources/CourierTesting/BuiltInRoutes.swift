import Foundation
import HTTPTypes

/// The httpbin-like routes every ``TestServer`` answers when no scripted response or custom
/// route applies.
struct BuiltInRoutes {
    let validBearerTokens: Set<String>?

    func respond(to request: RecordedRequest) -> ScriptedResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let first = parts.first ?? ""
        let argument = parts.count > 1 ? parts[1] : nil
        switch (first, parts.count) {
        case ("echo", 1), ("get", 1), ("anything", _): return Self.echo(request)
        case ("status", 2): return status(Int(argument!))
        case ("delay", 2):
            guard let ms = Int(argument!), ms >= 0 else { return badRequest("delay needs milliseconds") }
            var response = Self.echo(request)
            response.delay = .milliseconds(ms)
            return response
        case ("redirect", 2):
            guard let n = Int(argument!) else { return badRequest("redirect needs a count") }
            return .redirect(to: n > 1 ? "/redirect/\(n - 1)" : "/get")
        case ("redirect-to", 1): return redirectTo(request)
        case ("redirect-loop", 1): return .redirect(to: "/redirect-loop")
        case ("stream", 2): return stream(request, count: Int(argument!))
        case ("bytes", 2):
            guard let n = Int(argument!), n >= 0 else { return badRequest("bytes needs a count") }
            var response = ScriptedResponse(headers: [.contentType: "application/octet-stream"])
            response.patternLength = n
            return response
        case ("gzip", 1): return compressed(request, encoding: "gzip")
        case ("deflate", 1): return compressed(request, encoding: "deflate")
        case ("gzip-bomb", 1): return gzipBomb(request)
        case ("drop-mid-body", 1):
            return ScriptedResponse(body: TestServer.bytePattern(count: 100_000), fault: .closeDuringBody)
        case ("bearer", 1): return bearer(request)
        case ("cache", 2) where argument == "etag": return etag(request)
        case ("cache", 2) where argument == "last-modified": return lastModified(request)
        case ("response-headers", 1): return responseHeaders(request)
        case ("upload", 1):
            return .json([
                "bytes": request.bodyByteCount, "crc32": String(format: "%08x", request.bodyCRC32),
                "method": request.method, "contentType": request.header("Content-Type") ?? "",
            ])
        case ("fault", 2): return Self.fault(named: argument!, request: request) ?? notFound(request)
        default: return notFound(request)
        }
    }

    // MARK: - Echo and status

    /// `{"method","path","query","args","headers","body","bodyBase64","connectionID"}`.
    static func echo(_ request: RecordedRequest) -> ScriptedResponse {
        var headers: [String: String] = [:]
        for (name, value) in request.headerList {
            let key = name.lowercased()
            headers[key] = headers[key].map { $0 + ", " + value } ?? value
        }
        var args: [String: String] = [:]
        for (name, value) in request.queryItems where args[name] == nil { args[name] = value }
        return .json([
            "method": request.method, "path": request.path, "query": request.query ?? "", "args": args,
            "headers": headers, "body": request.bodyText, "bodyBase64": request.body.base64EncodedString(),
            "connectionID": request.connectionID,
        ])
    }

    private func status(_ code: Int?) -> ScriptedResponse {
        guard let code, (200...999).contains(code) else { return badRequest("status needs a code 200...999") }
        if code == 204 || code == 304 { return .status(code) }
        var response = ScriptedResponse.json(["status": code], status: code)
        if code == 401 { response.headers[.wwwAuthenticate] = "Bearer" }
        return response
    }

    private func badRequest(_ why: String) -> ScriptedResponse {
        .json(["error": why], status: 400)
    }

    private func notFound(_ request: RecordedRequest) -> ScriptedResponse {
        .json(["error": "no route for \(request.path)"], status: 404)
    }

    // MARK: - Redirects and streams

    private func redirectTo(_ request: RecordedRequest) -> ScriptedResponse {
        guard let url = request.queryValue("url") else { return badRequest("redirect-to needs url=") }
        let code = request.queryValue("status").flatMap(Int.init) ?? 302
        guard (300...399).contains(code) else { return badRequest("redirect-to needs a 3xx status") }
        return .redirect(to: url, status: code)
    }

    private func stream(_ request: RecordedRequest, count: Int?) -> ScriptedResponse {
        guard let count, count >= 0 else { return badRequest("stream needs a count") }
        let chunks = (0..<count).map { index in
            Data("{\"id\":\(index),\"path\":\"\(request.path)\"}\n".utf8)
        }
        let interval = request.queryValue("intervalMs").flatMap(Int.init) ?? 0
        return .chunked(chunks, headers: [.contentType: "application/x-ndjson"], interval: .milliseconds(interval))
    }

    // MARK: - Compression

    private func compressed(_ request: RecordedRequest, encoding: String) -> ScriptedResponse {
        let accepted = (request.header("Accept-Encoding") ?? "").lowercased().split(separator: ",").contains {
            let token = $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) ?? ""
            return token == encoding || token == "*"
        }
        var echo = Self.echo(request)
        let flag = encoding == "gzip" ? "gzipped" : "deflated"
        guard accepted else {
            // Not allowed to encode: send the document as is, saying so.
            echo.body = Data(echo.body.dropLast()) + Data(",\"\(flag)\":false}".utf8)
            return echo
        }
        let plain = Data(echo.body.dropLast()) + Data(",\"\(flag)\":true}".utf8)
        echo.body = encoding == "gzip" ? Compression.gzip(plain) : Compression.zlib(plain)
        echo.headers[.contentEncoding] = encoding
        echo.headers[.vary] = "Accept-Encoding"
        return echo
    }

    private func gzipBomb(_ request: RecordedRequest) -> ScriptedResponse {
        let size = request.queryValue("size").flatMap(Int.init) ?? 100 * 1024 * 1024
        var response = ScriptedResponse(
            headers: [.contentType: "application/octet-stream", .contentEncoding: "gzip"],
            body: Compression.gzipZeros(count: max(0, size)))
        response.headers[.init("X-Inflated-Size")!] = String(size)
        return response
    }
}

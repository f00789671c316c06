import Foundation

/// Responses a hostile server sends: floods, folds, control bytes, lying framing, bombs and
/// drips, written byte for byte (`Fault.raw`, `Fault.drip`). Each route's body, when the
/// response is readable at all, is `ok`.
extension BuiltInRoutes {
    static func hostile(named name: String, request: RecordedRequest) -> ScriptedResponse? {
        func number(_ key: String, _ fallback: Int) -> Int {
            max(0, request.queryValue(key).flatMap(Int.init) ?? fallback)
        }
        let ok = "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
        let text: String
        switch name {
        case "header-flood":
            // Tens of thousands of short field lines.
            // Appended in place: the head is ready in milliseconds, even on a starved pool.
            var head = "HTTP/1.1 200 OK\r\n"
            let lines = number("lines", 50_000)
            head.reserveCapacity(20 * lines + 100)
            for line in 0..<lines {
                head += "X-Flood-"
                head += String(line)
                head += ": v\r\n"
            }
            text = head + ok
        case "long-header":
            // One field line of `size` bytes.
            text = "HTTP/1.1 200 OK\r\nX-Long: " + String(repeating: "a", count: number("size", 200_000)) + "\r\n" + ok
        case "folded-header":
            // A value continued over `lines` obs-fold lines.
            let folds = String(repeating: " \tmore\r\n", count: number("lines", 3))
            text = "HTTP/1.1 200 OK\r\nX-Folded: start\r\n" + folds + "X-After: after\r\n" + ok
        case "control-bytes":
            // Control bytes other than CR, LF and NUL inside values, and a tab.
            text = "HTTP/1.1 200 OK\r\nX-Control: a\u{1}b\u{1B}c\u{7F}d\r\nX-Tab: a\tb\r\n" + ok
        case "bad-chunk-size":
            // A chunk size that is not hex, or overflows 64 bits.
            let size = request.queryValue("size") ?? "zz"
            text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n\(size)\r\nmore\r\n0\r\n\r\n"
        case "chunk-without-crlf":
            text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX4\r\nmore\r\n0\r\n\r\n"
        case "conflicting-content-length":
            text = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 4000\r\n\r\nok"
        case "negative-content-length":
            text = "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok"
        case "content-length-and-chunked":
            // Both framings: Transfer-Encoding wins (RFC 9112 §6.3), the length is ignored.
            text = "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
        case "trailers":
            // A chunked body whose trailer section sets fields the head did not have.
            text =
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Trailer, Set-Cookie\r\nX-Head: head\r\n\r\n"
                + "2\r\nok\r\n0\r\nX-Trailer: trailer\r\nSet-Cookie: sid=from-trailer\r\nX-Head: trailer\r\n\r\n"
        case "encoding-chain":
            // `layers` gzip layers, more than libcurl decodes (it stops at 5).
            let layers = number("layers", 6)
            var body = Data("ok".utf8)
            for _ in 0..<layers { body = Compression.gzip(body) }
            let encodings = Array(repeating: "gzip", count: layers).joined(separator: ", ")
            let head = "HTTP/1.1 200 OK\r\nContent-Encoding: \(encodings)\r\nContent-Length: \(body.count)\r\n\r\n"
            return ScriptedResponse(fault: .raw(Data(head.utf8) + body))
        case "nested-gzip-bomb":
            // gzip of gzip of `size` zeros: a few KiB on the wire.
            let body = Compression.gzip(Compression.gzipZeros(count: number("size", 256 << 20)))
            let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip, gzip\r\nContent-Length: \(body.count)\r\n\r\n"
            return ScriptedResponse(fault: .raw(Data(head.utf8) + body))
        case "bad-encoding":
            // A complete HTTP message (right Content-Length, or chunked) whose gzip or deflate
            // body is damaged: `damage=truncated` (the first half), `no-trailer` (all but the
            // 8-byte gzip or 4-byte zlib trailer), `bad-check` (CRC-32 or Adler-32 flipped),
            // `bad-size` (gzip ISIZE flipped), `trailing-garbage` (bytes after the end), `none`;
            // and two valid forms, `members` (two gzip members) and `raw` (DEFLATE, no wrapper).
            // The body inflates to `bytePattern(count: size)`.
            return damagedEncoding(request, size: number("size", 100_000))
        case "head-drip":
            // The head itself, one byte every `intervalMs`.
            let head = "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Drip: d\r\n", count: 100) + ok
            return ScriptedResponse(
                fault: .drip(Data(head.utf8), bytes: 1, interval: .milliseconds(number("intervalMs", 200))))
        default:
            return nil
        }
        return ScriptedResponse(fault: .raw(Data(text.utf8)))
    }

    /// The `bad-encoding` route: see `hostile(named:request:)`.
    private static func damagedEncoding(_ request: RecordedRequest, size: Int) -> ScriptedResponse {
        let plain = TestServer.bytePattern(count: size)
        let encoding = request.queryValue("encoding") ?? "gzip"
        var body = encoding == "deflate" ? Compression.zlib(plain) : Compression.gzip(plain)
        let trailer = encoding == "deflate" ? 4 : 8
        switch request.queryValue("damage") ?? "truncated" {
        case "truncated": body = body.prefix(body.count / 2)
        case "no-trailer": body = body.dropLast(trailer)
        case "bad-check": body[body.startIndex + body.count - trailer] ^= 0xFF
        case "bad-size": body[body.startIndex + body.count - 1] ^= 0xFF
        case "trailing-garbage": body += Data("garbage".utf8)
        // Valid forms: two gzip members one after the other (RFC 1952 §2.2), raw DEFLATE as `deflate`.
        case "members":
            let half = plain.count / 2
            body = Compression.gzip(plain.prefix(half)) + Compression.gzip(plain.dropFirst(half))
        case "raw": body = Compression.rawDeflate(plain)
        default: break
        }
        body = Data(body)
        var head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Encoding: \(encoding)\r\n"
        head += "Cache-Control: max-age=600\r\n"
        guard request.queryValue("framing") == "chunked" else {
            head += "Content-Length: \(body.count)\r\n\r\n"
            return ScriptedResponse(fault: .raw(Data(head.utf8) + body))
        }
        head += "Transfer-Encoding: chunked\r\n\r\n"
        var framed = Data(head.utf8)
        var offset = 0
        while offset < body.count {
            let piece = body[offset..<min(offset + 8192, body.count)]
            framed += Data((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Data("\r\n".utf8)
            offset += piece.count
        }
        framed += Data("0\r\n\r\n".utf8)
        return ScriptedResponse(fault: .raw(framed))
    }
}

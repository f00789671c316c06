import CCurl
import Foundation

/// The libcurl error behind a `CourierError` (its `underlying` value).
struct CurlFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `CURLcode` number.
    var code: Int
    /// curl's explanation from its error buffer, when it left one.
    var detail: String?

    init(code: Int, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    var description: String {
        let name = String(cString: curl_easy_strerror(CURLcode(UInt32(truncatingIfNeeded: code))))
        // The detail is already the `CourierError` message; repeating it helps no one.
        return "curl error \(code) (\(name))"
    }
}

extension CourierError {
    /// Maps a failed transfer's `CURLcode` to Courier's categories.
    ///
    /// curl's error-buffer text names hosts and ports but never header values or URL
    /// credentials, so it is safe to keep in the message.
    static func fromCurl(_ code: CURLcode, detail: String?) -> CourierError {
        let failure = CurlFailure(code: Int(code.rawValue), detail: detail)
        let reason = detail.flatMap { $0.isEmpty ? nil : $0 } ?? String(cString: curl_easy_strerror(code))
        let category: Code
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            category = .cannotConnect
        case CURLE_OPERATION_TIMEDOUT:
            category = .timedOut
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
            CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_CLIENTCERT:
            category = .tls
        case CURLE_URL_MALFORMAT:
            category = .invalidRequest
        case CURLE_BAD_CONTENT_ENCODING, CURLE_UNSUPPORTED_PROTOCOL:
            // Schemes are checked before sending, so "unsupported protocol" means the server
            // answered with something that is not HTTP/1.x or HTTP/2.
            category = .invalidResponse
        case CURLE_WEIRD_SERVER_REPLY, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3:
            category = .invalidResponse
        case CURLE_GOT_NOTHING:
            // The connection closed before any byte of an answer: a reset by another name (a
            // server restarting, an idle connection it dropped), not an answer that broke HTTP.
            // Transient, so the retry policy sends an idempotent request again.
            category = .transport
        case CURLE_FILESIZE_EXCEEDED:
            category = .responseTooLarge
        default:
            // SEND_ERROR, RECV_ERROR, WRITE_ERROR not caused by Courier, RECURSIVE_API_CALL, and the rest.
            category = .transport
        }
        return CourierError(category, reason, underlying: failure)
    }
}

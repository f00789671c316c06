import CCurl
import HTTPTypes

extension CurlTransfer {
    /// The failures a pooled connection that went bad while idle ends in: the server closed it
    /// (nothing, or a reset, comes back), or bytes it left behind (a body longer than its
    /// `Content-Length`) are read as the start of the next response. On HTTP/2, a stream the
    /// server reset before answering, or one a GOAWAY cut (libcurl 7.88 reports some of those
    /// as a framing error instead of retrying them itself, as later versions do).
    private static let staleConnectionFailures: Set<UInt32> = [
        CURLE_GOT_NOTHING.rawValue, CURLE_RECV_ERROR.rawValue, CURLE_SEND_ERROR.rawValue,
        CURLE_UNSUPPORTED_PROTOCOL.rawValue, CURLE_WEIRD_SERVER_REPLY.rawValue, CURLE_HTTP2.rawValue,
        CURLE_HTTP2_STREAM.rawValue,
    ]

    /// Whether a transfer that failed on a reused connection before any response arrived
    /// should be sent once more on a new connection, as browsers and OkHttp do. Prepares the
    /// transfer for that second start when it should. Runs on the curl thread.
    ///
    /// Only idempotent requests (`HTTPRequest.Method.isIdempotent`, the retry policy's list) are
    /// sent again: a server may have acted on a POST whose answer
    /// was lost. A failure on a new connection, a second failure, or a failure after the
    /// response head arrived is the caller's.
    func shouldRetryOnFreshConnection(after code: CURLcode, handle: EasyHandle) -> Bool {
        guard code != CURLE_OK, !retriedOnFreshConnection, callbackFailure == nil, head == nil,
            receivedBytes == 0, Self.staleConnectionFailures.contains(code.rawValue),
            method.isIdempotent, handle.infoLong(CURLINFO_NUM_CONNECTS) == 0, !isCancelled
        else { return false }
        let spent = Duration.microseconds(handle.infoOffset(CURLINFO_TOTAL_TIME_T))
        if let timeout = options.timeout, spent >= timeout { return false }
        retriedOnFreshConnection = true
        timeSpentBeforeRetry = spent
        parser = ResponseHeadParser()
        buffer = ResponseBuffer()
        decoder = nil
        lastUpload = TransferProgress(completed: -1, total: nil)
        lastDownload = TransferProgress(completed: -1, total: nil)
        isConnected = false
        stallMoved = -1
        return true
    }
}

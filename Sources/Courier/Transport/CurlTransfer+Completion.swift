import CCurl
import Foundation

extension CurlTransfer {
    /// What the transfer came to, read on the loop thread right after curl reported it done.
    func outcome(code: CURLcode, handle: EasyHandle) -> Result<TransportResponse, any Error> {
        let metrics = TransferMetrics(handle: handle)
        if var failure = callbackFailure {
            failure.response = head
            if failure.code == .timedOut { failure.timedOutConnecting = handle.neverConnected }
            return .failure(failure)
        }
        guard code == CURLE_OK else {
            var failure = CourierError.fromCurl(code, detail: handle.errorMessage)
            failure.response = head
            if failure.code == .timedOut { failure.timedOutConnecting = handle.neverConnected }
            return .failure(failure)
        }
        guard let head else {
            return .failure(CourierError(.invalidResponse, "the server closed the connection without a response"))
        }
        do {
            // The message was complete; a compressed stream in it that was not is an error.
            try decoder?.finish()
        } catch {
            var failure = error
            failure.response = head
            return .failure(failure)
        }
        return .success(TransportResponse(head: head, body: buffer.take(), metrics: metrics))
    }

    /// Ends the transfer for its caller (and its body stream); safe to call more than once.
    func finish(_ result: Result<TransportResponse, any Error>) {
        bodyReader = nil
        if case .streaming(let stream) = delivery {
            switch result {
            case .success: stream.finish(nil)
            case .failure(let error): stream.finish(error)
            }
        }
        resume(with: result)
    }
}

extension TransferMetrics {
    /// Reads the timings and sizes curl kept for the transfer that just ended.
    init(handle: EasyHandle) {
        func time(_ info: CURLINFO) -> Duration { .microseconds(handle.infoOffset(info)) }
        let version: HTTPVersion
        switch handle.infoLong(CURLINFO_HTTP_VERSION) {
        case CURL_HTTP_VERSION_1_0: version = .http1_0
        case CURL_HTTP_VERSION_1_1: version = .http1_1
        case CURL_HTTP_VERSION_2_0: version = .http2
        case CURL_HTTP_VERSION_3: version = .http3
        default: version = .unknown
        }
        self.init(
            nameLookup: time(CURLINFO_NAMELOOKUP_TIME_T),
            connect: time(CURLINFO_CONNECT_TIME_T),
            tlsHandshake: time(CURLINFO_APPCONNECT_TIME_T),
            timeToFirstByte: time(CURLINFO_STARTTRANSFER_TIME_T),
            total: time(CURLINFO_TOTAL_TIME_T),
            bytesSent: Int64(handle.infoLong(CURLINFO_REQUEST_SIZE)) + handle.infoOffset(CURLINFO_SIZE_UPLOAD_T),
            bytesReceived: Int64(handle.infoLong(CURLINFO_HEADER_SIZE)) + handle.infoOffset(CURLINFO_SIZE_DOWNLOAD_T),
            httpVersion: version,
            reusedConnection: handle.infoLong(CURLINFO_NUM_CONNECTS) == 0)
    }
}

import CCurl
import CCurlShim

extension EasyHandle {
    /// Everything a transfer sets on a handle besides its URL, header list and callback data.
    ///
    /// `curl_easy_reset` and setting every default again cost ~7k instructions per request on
    /// the transport's thread (three of the defaults are strings curl parses and copies). A
    /// handle whose last transfer went well keeps its options instead: the next transfer
    /// changes only the settings that differ, which curl documents as the way to reuse a handle
    /// (options stay set until changed; per-transfer state is reset when a transfer starts).
    struct Settings: Equatable {
        /// The options of the transport, the same for every transfer.
        struct Constant: Equatable {
            /// curl's `NOPROXY` list.
            var noProxy: String?
            var trust: TrustStore
        }

        var constant: Constant
        /// The proxy of the transfer's scheme (nil: none).
        var proxy: ProxyRoute?
        /// Wait for a connection being set up to tell (by ALPN) whether it multiplexes (HTTP/2)
        /// instead of opening another. Only for https: a plain-http connection is HTTP/1.1
        /// anyway, and curl would hold new requests until the first response came back.
        var pipeWait = false
        /// Open a new connection instead of taking one from the pool.
        var freshConnect = false
        /// The body size, for a transfer that sends one.
        var uploadSize: Int64?
        /// HEAD: ask for the head only.
        var noBody = false
        /// The method, when curl would not send it by itself (not GET, HEAD, or PUT with a body).
        var customRequest: String?
        /// 0: no limit.
        var timeoutMilliseconds = 0
        var connectTimeoutMilliseconds = 0
        /// curl's low-speed time (0: off): with a stall timeout, `CurlLoop.lowSpeedWakeSeconds`,
        /// which only wakes the transfer every second (`CurlTransfer.hasStalled` times the stall).
        var stallSeconds = 0
        var reportsProgress = false
        var receiveBufferSize = ReceiveBufferSizes.maximum
        /// `CURLOPT_UPLOAD_BUFFERSIZE`: how much of the body one read callback may give.
        var uploadBufferSize = ReceiveBufferSizes.upload

        /// How curl decides the method.
        fileprivate var methodParts: MethodParts {
            MethodParts(uploadSize: uploadSize, noBody: noBody, customRequest: customRequest)
        }
    }

    fileprivate struct MethodParts: Equatable {
        var uploadSize: Int64?
        var noBody: Bool
        var customRequest: String?
    }

    /// Makes the handle ready for a transfer: its defaults when it has none, then the settings
    /// that differ from the ones it has, the URL, the header list and the callback data.
    /// - Parameters:
    ///   - settings: what the transfer needs.
    ///   - url: the URL.
    ///   - headers: the header list; it must stay alive until the transfer ended.
    ///   - context: the transfer, for the callbacks.
    ///   - resolve: the `CURLOPT_RESOLVE` list, if any.
    ///   - load: the loop's load counters (sockets, queued transfers).
    /// - Throws: `CourierError` when curl refuses an option; the handle must then be `reset()`.
    func prepare(
        _ settings: Settings, url: String, headers: UnsafeMutablePointer<curl_slist>?,
        context: UnsafeMutableRawPointer, resolve: UnsafeMutablePointer<curl_slist>?, load: OpaquePointer
    ) throws(CourierError) {
        let current: Settings
        if let applied {
            current = applied
            clearErrorMessage()
        } else {
            try setDefaults()
            try setCallbackFunctions(load: load)
            // Always set: a handle without a proxy option would read `http_proxy` & co.
            try setProxy(settings.proxy)
            // "" rather than nil: with nil, curl would read `no_proxy` from the environment and
            // let it bypass a proxy the configuration names.
            try setString(CURLOPT_NOPROXY, settings.constant.noProxy ?? "", "NOPROXY")
            try setTrust(settings.constant.trust)
            if let resolve { try setResolve(resolve) }
            // What curl has after a reset.
            current = Settings(
                constant: settings.constant, proxy: settings.proxy, timeoutMilliseconds: 0,
                connectTimeoutMilliseconds: -1,
                receiveBufferSize: -1, uploadBufferSize: ReceiveBufferSizes.upload)
        }
        // Until every option below is set, the handle's settings are unknown.
        applied = nil
        try setURL(url)
        try setHeaders(headers)
        try setCallbackData(context)
        if settings.proxy != current.proxy { try setProxy(settings.proxy) }
        if settings.pipeWait != current.pipeWait {
            try setLong(CURLOPT_PIPEWAIT, settings.pipeWait ? 1 : 0, "PIPEWAIT")
        }
        if settings.freshConnect != current.freshConnect {
            try setLong(CURLOPT_FRESH_CONNECT, settings.freshConnect ? 1 : 0, "FRESH_CONNECT")
        }
        if settings.methodParts != current.methodParts {
            // Back to a plain GET (no upload, no "head only"), then what this transfer needs.
            if current.uploadSize != nil || current.noBody { try setLong(CURLOPT_HTTPGET, 1, "HTTPGET") }
            if current.customRequest != nil, settings.customRequest == nil {
                try setString(CURLOPT_CUSTOMREQUEST, nil, "CUSTOMREQUEST")
            }
            if let size = settings.uploadSize {
                try setUpload(size: size)
            } else if settings.noBody {
                try setNoBody()
            }
            if let method = settings.customRequest, method != current.customRequest {
                try setCustomRequest(method)
            }
        }
        if settings.timeoutMilliseconds != current.timeoutMilliseconds {
            try setLong(CURLOPT_TIMEOUT_MS, settings.timeoutMilliseconds, "TIMEOUT_MS")
        }
        if settings.connectTimeoutMilliseconds != current.connectTimeoutMilliseconds {
            try setLong(CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMilliseconds, "CONNECTTIMEOUT_MS")
        }
        if settings.stallSeconds != current.stallSeconds {
            try setLong(CURLOPT_LOW_SPEED_LIMIT, settings.stallSeconds > 0 ? 1 : 0, "LOW_SPEED_LIMIT")
            try setLong(CURLOPT_LOW_SPEED_TIME, settings.stallSeconds, "LOW_SPEED_TIME")
        }
        if settings.reportsProgress != current.reportsProgress {
            try setLong(CURLOPT_NOPROGRESS, settings.reportsProgress ? 0 : 1, "NOPROGRESS")
        }
        if settings.receiveBufferSize != current.receiveBufferSize {
            try setReceiveBufferSize(settings.receiveBufferSize)
        }
        if settings.uploadBufferSize != current.uploadBufferSize {
            try setLong(CURLOPT_UPLOAD_BUFFERSIZE, settings.uploadBufferSize, "UPLOAD_BUFFERSIZE")
        }
        applied = settings
    }

    /// After a transfer that went well: keeps the options, drops the pointers into the
    /// transfer (its header list is freed with it). Resets the handle when that fails, or
    /// when its settings are unknown.
    func release() {
        guard applied != nil else {
            reset()
            return
        }
        let cleared =
            courier_easy_setopt_slist(raw, CURLOPT_HTTPHEADER, nil) == CURLE_OK
            && (try? setCallbackData(nil)) != nil
        if !cleared { reset() }
    }
}

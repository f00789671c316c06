import CCurl
import CCurlShim
import Foundation

/// Owns one libcurl easy handle: one method per option, every `CURLcode` checked.
///
/// Used only on the transport's thread. Handles are pooled so connections, TLS sessions and
/// DNS entries (which live in the multi handle) are reused without paying for a fresh handle
/// each time. After a transfer that went well a handle keeps its options, and the next one
/// changes only those that differ (see `EasyHandle+Settings.swift`); after any other it is
/// `reset()`.
final class EasyHandle {
    let raw: UnsafeMutableRawPointer
    /// curl writes a readable reason here when a transfer fails (`CURLOPT_ERRORBUFFER`).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// The options the handle has, when it has its defaults (nil after `init` and `reset()`).
    var applied: Settings?

    init() throws(CourierError) {
        guard let raw = curl_easy_init() else {
            throw CourierError(.transport, "libcurl could not create an easy handle")
        }
        self.raw = raw
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }

    /// Forgets every option set for the previous request.
    func reset() {
        curl_easy_reset(raw)
        errorBuffer[0] = 0
        applied = nil
    }

    /// Clears the error message of the previous transfer.
    func clearErrorMessage() {
        errorBuffer[0] = 0
    }

    /// The message curl left in the error buffer, if any.
    var errorMessage: String? {
        errorBuffer[0] == 0 ? nil : String(cString: errorBuffer)
    }

    // MARK: Options that hold for every request

    /// The options every Courier transfer has, whatever the request.
    func setDefaults() throws(CourierError) {
        errorBuffer[0] = 0
        try check(courier_easy_setopt_pointer(raw, CURLOPT_ERRORBUFFER, errorBuffer), "ERRORBUFFER")
        // Never let curl install signal handlers or use alarm(): we are one thread of many.
        try setLong(CURLOPT_NOSIGNAL, 1, "NOSIGNAL")
        // Redirects are Courier's job, hop by hop, with its own rules.
        try setLong(CURLOPT_FOLLOWLOCATION, 0, "FOLLOWLOCATION")
        try setString(CURLOPT_PROTOCOLS_STR, "http,https", "PROTOCOLS_STR")
        try setString(CURLOPT_REDIR_PROTOCOLS_STR, "http,https", "REDIR_PROTOCOLS_STR")
        try setLong(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS, "HTTP_VERSION")
        // Content codings are Courier's (`ContentDecoder`): libcurl 7.88 hands out a truncated
        // compressed body without an error. No Accept-Encoding from curl, and no decoding.
        try setString(CURLOPT_ACCEPT_ENCODING, nil, "ACCEPT_ENCODING")
        try setLong(CURLOPT_HTTP_CONTENT_DECODING, 0, "HTTP_CONTENT_DECODING")
        try setLong(CURLOPT_SSL_VERIFYPEER, 1, "SSL_VERIFYPEER")
        try setLong(CURLOPT_SSL_VERIFYHOST, 2, "SSL_VERIFYHOST")
        try setLong(CURLOPT_NOPROGRESS, 1, "NOPROGRESS")
    }

    // MARK: Per-request options

    func setURL(_ url: String) throws(CourierError) {
        try setString(CURLOPT_URL, url, "URL")
    }

    /// HEAD: ask for the head only.
    func setNoBody() throws(CourierError) { try setLong(CURLOPT_NOBODY, 1, "NOBODY") }

    /// Sends a body of `size` bytes produced by the read callback, with any method.
    func setUpload(size: Int64) throws(CourierError) {
        try setLong(CURLOPT_UPLOAD, 1, "UPLOAD")
        try check(courier_easy_setopt_off_t(raw, CURLOPT_INFILESIZE_LARGE, curl_off_t(size)), "INFILESIZE_LARGE")
    }

    func setCustomRequest(_ method: String) throws(CourierError) {
        try setString(CURLOPT_CUSTOMREQUEST, method, "CUSTOMREQUEST")
    }

    /// The header list must stay alive until the transfer ended; curl does not copy it.
    func setHeaders(_ list: UnsafeMutablePointer<curl_slist>?) throws(CourierError) {
        try check(courier_easy_setopt_slist(raw, CURLOPT_HTTPHEADER, list), "HTTPHEADER")
    }

    /// `host:port:address` entries that bypass DNS. The list must outlive the handle's use.
    func setResolve(_ list: UnsafeMutablePointer<curl_slist>?) throws(CourierError) {
        try check(courier_easy_setopt_slist(raw, CURLOPT_RESOLVE, list), "RESOLVE")
    }

    /// The size of the buffer curl reads the response into (1 KiB to 512 KiB).
    func setReceiveBufferSize(_ bytes: Int) throws(CourierError) {
        try setLong(CURLOPT_BUFFERSIZE, bytes, "BUFFERSIZE")
    }

    /// `nil` sets an empty proxy, which also makes curl ignore `http_proxy` & co. The
    /// credentials go apart from the URL, so curl never prints them with it.
    func setProxy(_ proxy: ProxyRoute?) throws(CourierError) {
        try setString(CURLOPT_PROXY, proxy?.url ?? "", "PROXY")
        try setString(CURLOPT_PROXYUSERNAME, proxy?.username, "PROXYUSERNAME")
        try setString(CURLOPT_PROXYPASSWORD, proxy?.password, "PROXYPASSWORD")
        // A CONNECT tunnel's "200 Connection established" head is not the response.
        try setLong(CURLOPT_SUPPRESS_CONNECT_HEADERS, proxy != nil ? 1 : 0, "SUPPRESS_CONNECT_HEADERS")
    }

    /// The certificates a TLS peer must chain to.
    ///
    /// libcurl starts every handle with its compiled-in defaults, a CA file *and* a CA
    /// directory (on Debian `/etc/ssl/certs/ca-certificates.crt` and `/etc/ssl/certs`), and
    /// OpenSSL trusts a peer that chains to either. Setting only `CURLOPT_CAINFO` therefore
    /// adds to the system store rather than replacing it: a custom bundle also clears the CA
    /// directory and any in-memory bundle.
    func setTrust(_ trust: TrustStore) throws(CourierError) {
        if let system = trust.systemDefaults {
            // Stands in for libcurl's compiled-in defaults (tests only).
            try setString(CURLOPT_CAINFO, system.file, "CAINFO")
            try setString(CURLOPT_CAPATH, system.directory, "CAPATH")
        }
        guard let bundle = trust.customBundlePath else { return }
        try setString(CURLOPT_CAINFO, bundle, "CAINFO")
        try setString(CURLOPT_CAPATH, nil, "CAPATH")
        try check(courier_easy_setopt_pointer(raw, CURLOPT_CAINFO_BLOB, nil), "CAINFO_BLOB")
    }

    /// The callbacks themselves; the data pointers are set per transfer. Sockets are opened
    /// and closed through `load`'s counter, which must outlive every connection (the loop's).
    func setCallbackFunctions(load: OpaquePointer) throws(CourierError) {
        try check(courier_easy_count_sockets(raw, load), "OPENSOCKETFUNCTION")
        try check(courier_easy_setopt_prereq_callback(raw, curlPrereqCallback), "PREREQFUNCTION")
        try check(courier_easy_setopt_write_callback(raw, curlWriteCallback), "WRITEFUNCTION")
        try check(courier_easy_setopt_header_callback(raw, curlHeaderCallback), "HEADERFUNCTION")
        try check(courier_easy_setopt_read_callback(raw, curlReadCallback), "READFUNCTION")
        try check(courier_easy_setopt_seek_callback(raw, curlSeekCallback), "SEEKFUNCTION")
        try check(courier_easy_setopt_xferinfo_callback(raw, curlProgressCallback), "XFERINFOFUNCTION")
    }

    /// Points every callback at a transfer.
    func setCallbackData(_ context: UnsafeMutableRawPointer?) throws(CourierError) {
        try check(courier_easy_setopt_pointer(raw, CURLOPT_WRITEDATA, context), "WRITEDATA")
        try check(courier_easy_setopt_pointer(raw, CURLOPT_HEADERDATA, context), "HEADERDATA")
        try check(courier_easy_setopt_pointer(raw, CURLOPT_READDATA, context), "READDATA")
        try check(courier_easy_setopt_pointer(raw, CURLOPT_SEEKDATA, context), "SEEKDATA")
        try check(courier_easy_setopt_pointer(raw, CURLOPT_XFERINFODATA, context), "XFERINFODATA")
        try check(courier_easy_setopt_pointer(raw, CURLOPT_PREREQDATA, context), "PREREQDATA")
    }

    // MARK: Information after a transfer

    func infoLong(_ info: CURLINFO) -> Int {
        var value = 0
        return courier_easy_getinfo_long(raw, info, &value) == CURLE_OK ? value : 0
    }

    func infoOffset(_ info: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        return courier_easy_getinfo_off_t(raw, info, &value) == CURLE_OK ? Int64(value) : 0
    }

    /// Whether the transfer that just ended never had a connection: none was completed (its
    /// connect time is 0) and none was reused (a reused one is 0 too, but has a peer address).
    var neverConnected: Bool {
        guard infoOffset(CURLINFO_CONNECT_TIME_T) == 0 else { return false }
        var address: UnsafeMutablePointer<CChar>?
        guard courier_easy_getinfo_string(raw, CURLINFO_PRIMARY_IP, &address) == CURLE_OK, let address else {
            return true
        }
        return address.pointee == 0
    }

    // MARK: Helpers

    func setLong(_ option: CURLoption, _ value: Int, _ name: StaticString) throws(CourierError) {
        try check(courier_easy_setopt_long(raw, option, value), name)
    }

    func setString(_ option: CURLoption, _ value: String?, _ name: StaticString) throws(CourierError) {
        guard let value else {
            try check(courier_easy_setopt_string(raw, option, nil), name)
            return
        }
        let code = value.withCString { courier_easy_setopt_string(raw, option, $0) }
        try check(code, name)
    }

    func check(_ code: CURLcode, _ name: StaticString) throws(CourierError) {
        guard code != CURLE_OK else { return }
        throw CourierError(
            code == CURLE_UNKNOWN_OPTION || code == CURLE_NOT_BUILT_IN ? .configuration : .invalidRequest,
            "libcurl refused CURLOPT_\(name): \(String(cString: curl_easy_strerror(code)))",
            underlying: CurlFailure(code: Int(code.rawValue)))
    }
}

/// Where the certificates that TLS peers must chain to come from.
struct TrustStore: Equatable {
    /// A PEM bundle that replaces the system store (its file and its directory); nil: the system store.
    var customBundlePath: String?
    /// What the "system store" is, when not libcurl's compiled-in defaults: lets a test stand
    /// a store of its own in for the machine's, so it does not depend on what the machine trusts.
    var systemDefaults: CurlTransport.SystemTrustStore?
}

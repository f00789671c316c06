import CCurl
import CCurlShim
import Foundation

// libcurl's callbacks. Each gets the transfer through an unretained pointer: the loop keeps
// the transfer alive while its handle is in the multi handle, and curl only calls back from
// inside `curl_multi_perform` / `curl_easy_pause` on the loop's thread.

func curlWriteCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
}

func curlHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context, let data else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length)
    return transfer.receiveHeaderLine(line) ? length : 0
}

func curlReadCallback(
    _ destination: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context, let destination else { return Int(CURL_READFUNC_ABORT) }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    guard let reader = transfer.bodyReader else { return 0 }
    do {
        guard let count = try reader.read(into: destination, capacity: size * count) else {
            return Int(CURL_READFUNC_PAUSE)
        }
        return count
    } catch {
        transfer.callbackFailure = error
        return Int(CURL_READFUNC_ABORT)
    }
}

func curlSeekCallback(_ context: UnsafeMutableRawPointer?, _ offset: curl_off_t, _ origin: Int32) -> Int32 {
    guard let context else { return Int32(CURL_SEEKFUNC_FAIL) }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    guard origin == SEEK_SET, let reader = transfer.bodyReader, reader.seek(to: Int64(offset)) else {
        return Int32(CURL_SEEKFUNC_CANTSEEK)
    }
    return Int32(CURL_SEEKFUNC_OK)
}

func curlProgressCallback(
    _ context: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploaded: curl_off_t
) -> Int32 {
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    if transfer.hasStalled(moved: Int64(downloaded) + Int64(uploaded)) { return 1 }
    guard transfer.reportsProgress else { return 0 }
    transfer.reportProgress(
        download: TransferProgress(completed: Int64(downloaded), total: downloadTotal > 0 ? Int64(downloadTotal) : nil),
        upload: TransferProgress(completed: Int64(uploaded), total: uploadTotal > 0 ? Int64(uploadTotal) : nil))
    return 0
}

/// `CURLOPT_PREREQFUNCTION`: the transfer has a connection (new or reused) and is about to send.
func curlPrereqCallback(
    _ context: UnsafeMutableRawPointer?, _ primaryIP: UnsafeMutablePointer<CChar>?,
    _ localIP: UnsafeMutablePointer<CChar>?, _ primaryPort: Int32, _ localPort: Int32
) -> Int32 {
    if let context {
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        transfer.leaveQueue()
        // A second send within one transfer is libcurl's own retry: a request that got nothing
        // back on a reused connection goes again on another, whatever its method. Over
        // HTTP/1.1 the server may have read and acted on a POST before it closed the
        // connection, so a request that is not idempotent goes twice only when its first
        // connection spoke HTTP/2, where libcurl resends the streams a GOAWAY or REFUSED_STREAM
        // says were not processed. (Courier's own retry, `shouldRetryOnFreshConnection`, starts
        // a fresh transfer state with `isConnected` false.) The refusal is `.transport`, as an
        // empty reply on a new connection is: the retry policy sends it again only when it
        // allows retrying a method that is not idempotent.
        if transfer.isConnected, !transfer.method.isIdempotent,
            transfer.multiplexedConnections?.contains(transfer.connectionKey) != true
        {
            transfer.callbackFailure = CourierError(
                .transport,
                "the connection ended before an answer came; the \(transfer.method.rawValue) request is not sent "
                    + "again (the server may have acted on it)")
            return Int32(CURL_PREREQFUNC_ABORT)
        }
        transfer.isConnected = true
        transfer.connectionKey = connectionKey(primaryIP, primaryPort, localPort)
    }
    return Int32(CURL_PREREQFUNC_OK)
}

/// A connection's key for `MultiplexedConnections`: its remote address and port and its local
/// port (FNV-1a over the address's text, the ports mixed in).
private func connectionKey(_ primaryIP: UnsafeMutablePointer<CChar>?, _ primaryPort: Int32, _ localPort: Int32)
    -> Int64
{
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    if var byte = primaryIP {
        while byte.pointee != 0 {
            hash = (hash ^ UInt64(UInt8(bitPattern: byte.pointee))) &* 0x100_0000_01b3
            byte += 1
        }
    }
    let ports = UInt64(UInt32(truncatingIfNeeded: primaryPort)) << 32 | UInt64(UInt32(truncatingIfNeeded: localPort))
    return Int64(bitPattern: (hash ^ ports) &* 0x100_0000_01b3)
}

extension CurlTransfer {
    /// Counts the transfer as waiting for a connection in `load` until `leaveQueue()`.
    func enterQueue(_ load: OpaquePointer) {
        leaveQueue()
        courier_transport_load_add_queued(load, 1)
        queuedIn = load
    }

    /// No longer waiting for a connection: it has one, or it ended.
    func leaveQueue() {
        guard let load = queuedIn else { return }
        courier_transport_load_add_queued(load, -1)
        queuedIn = nil
    }

    /// Largest up-front allocation a `Content-Length` may cause; beyond it the buffer grows
    /// as bytes really arrive, so a lying server cannot make us allocate the cap for nothing.
    private static let maxReservation = 4 << 20

    /// Takes body bytes from the write callback. Returns the count taken (anything else
    /// makes curl fail the transfer), or `CURL_WRITEFUNC_PAUSE`.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if isMultiplexed { passProgress?.received = true }
        let length = bytes.count
        guard length > 0, let start = bytes.baseAddress else { return length }
        if let decoder { return receiveEncoded(bytes, decoder) }
        // Counted after decoding, so a small compressed body cannot inflate past the cap.
        if receivedBytes + Int64(length) > options.maxResponseSize {
            callbackFailure = .tooLarge(options.maxResponseSize)
            return 0
        }
        switch delivery {
        case .buffered:
            guard buffer.append(start, length: length) else {
                callbackFailure = CourierError(
                    .transport, "out of memory for a \(receivedBytes + Int64(length))-byte body")
                return 0
            }
        case .streaming(let stream):
            switch stream.offer(bytes) {
            case .full:
                isReceivePaused = true
                return Int(CURL_WRITEFUNC_PAUSE)
            case .taken(let flush): if flush { streamsToFlush?.streams.append(stream) }
            }
        }
        receivedBytes += Int64(length)
        return length
    }

    /// Takes compressed body bytes: inflates them and keeps or streams what they decode to.
    /// Returns as `receiveBody(_:)`.
    private func receiveEncoded(_ bytes: UnsafeRawBufferPointer, _ decoder: ContentDecoder) -> Int {
        // The decoder cannot give back bytes it inflated: a stream is paused before, not during.
        if case .streaming(let stream) = delivery, stream.pausesWhenFull() {
            isReceivePaused = true
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        do {
            try decoder.decode(bytes) { (piece) throws(CourierError) in try keepDecoded(piece) }
        } catch {
            callbackFailure = error
            return 0
        }
        return bytes.count
    }

    /// Keeps (or streams) one decoded piece, within the size cap.
    private func keepDecoded(_ piece: UnsafeRawBufferPointer) throws(CourierError) {
        let length = piece.count
        if receivedBytes + Int64(length) > options.maxResponseSize { throw .tooLarge(options.maxResponseSize) }
        switch delivery {
        case .buffered:
            guard buffer.append(piece.baseAddress!, length: length) else {
                throw CourierError(.transport, "out of memory for a \(receivedBytes + Int64(length))-byte body")
            }
        case .streaming(let stream):
            if case .taken(true) = stream.offer(piece, force: true) { streamsToFlush?.streams.append(stream) }
        }
        receivedBytes += Int64(length)
    }

    /// Parses one header line. Returns false to abort the transfer.
    func receiveHeaderLine(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        if !isMultiplexed, parser.status == 0, line.starts(with: "HTTP/".utf8) {
            isMultiplexed = line.starts(with: "HTTP/2".utf8)
            // What the connection speaks, for a resend of a POST (`curlPrereqCallback`).
            multiplexedConnections?.record(connectionKey, multiplexed: isMultiplexed)
        }
        if isMultiplexed { passProgress?.received = true }
        switch parser.consume(line) {
        case .needMore:
            return true
        case .invalid:
            callbackFailure = CourierError(.invalidResponse, "the server sent a malformed response head")
            return false
        case .tooLarge:
            callbackFailure = CourierError(
                .responseTooLarge,
                "the response head is larger than \(ResponseHeadParser.maxHeadBytes) bytes or "
                    + "\(ResponseHeadParser.maxFieldCount) fields")
            return false
        case .complete:
            // Courier speaks HTTP only and never asks for an upgrade, so a 101 switches to a
            // protocol it cannot speak (RFC 9110 §15.2.2); libcurl 7.88 would read whatever
            // follows it as its body.
            guard parser.status != 101 else {
                callbackFailure = CourierError(
                    .invalidResponse, "the server switched protocols (101); Courier speaks only HTTP")
                return false
            }
            var response = parser.response
            if parser.hasTransferEncoding, !acceptsTransferCodings, method != .head, response.status.code != 204,
                response.status.code != 304,
                let coding = ContentDecoder.undecodedTransferCoding(response.headerFields[values: .transferEncoding])
            {
                head = response
                callbackFailure = CourierError(
                    .invalidResponse,
                    "the response has Transfer-Encoding \(coding.prefix(40)), which Courier did not ask for (it "
                        + "sends no TE) and does not decode")
                return false
            }
            if decodesContent, parser.isEncoded, method != .head, response.status.code != 204,
                response.status.code != 304
            {
                do {
                    let codings = try ContentDecoder.codings(response.headerFields[values: .contentEncoding])
                    if !codings.isEmpty {
                        decoder = try ContentDecoder(codings: codings)
                        // The head describes the body handed out (and cached): decoded, of a
                        // length known only at its end.
                        response.headerFields[.contentEncoding] = nil
                        response.headerFields[.contentLength] = nil
                    }
                } catch {
                    head = response
                    callbackFailure = error
                    return false
                }
            }
            head = response
            if let length = parser.contentLength, !parser.isEncoded, method != .head,
                response.status.code != 204, response.status.code != 304
            {
                if length > options.maxResponseSize {
                    callbackFailure = .tooLarge(options.maxResponseSize)
                    return false
                }
                if case .buffered = delivery { buffer.reserve(Int(min(length, Int64(Self.maxReservation)))) }
            }
            if case .streaming = delivery {
                resume(with: .success(TransportResponse(head: response, body: Data(), metrics: TransferMetrics())))
            }
            return true
        }
    }

    /// The stall timeout: whether no byte moved either way for `options.stallTimeout` while
    /// the transfer had its connection and was not paused for a reader that is behind; sets
    /// the failure then. Timed here rather than by curl's low-speed check, which averages: a
    /// steady byte every 1.5 s is under 1 byte/s, and curl failed it as a 3 s stall.
    /// - Parameter moved: the bytes received and sent so far.
    ///
    /// Called about ten times for a small request on a fast connection, so it reads the coarse
    /// monotonic clock (a few milliseconds' resolution, against timeouts of whole seconds) and
    /// works the limit out once.
    func hasStalled(moved: Int64) -> Bool {
        guard let stall = options.stallTimeout, isConnected else { return false }
        let now = Self.coarseNanoseconds()
        if moved != stallMoved || isReceivePaused {
            stallMoved = moved
            stallSinceNanoseconds = now
            return false
        }
        if stallLimitNanoseconds == 0 {
            // Whole seconds within 1 s...`ConfigurationBounds.maximumTimeout` (24 days), as curl
            // had them: a transport request that bypassed the client's checks may carry any value.
            stallLimitNanoseconds = Int64(stall.wholeSecondsRoundedUp) * 1_000_000_000
        }
        guard now - stallSinceNanoseconds >= stallLimitNanoseconds else { return false }
        let limit = Duration.nanoseconds(stallLimitNanoseconds)
        callbackFailure = CourierError(.timedOut, "too slow: no byte moved for \(limit) (the stall timeout)")
        return true
    }

    /// The coarse monotonic clock (`CLOCK_MONOTONIC_COARSE`), in nanoseconds.
    private static func coarseNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    func reportProgress(download: TransferProgress, upload: TransferProgress) {
        var upload = upload
        // A chunked body: curl counts the chunk framing too; the caller wants body bytes.
        if bodyLength == nil, let bodyReader { upload.completed = bodyReader.position }
        if let callback = options.downloadProgress, download != lastDownload, download.completed > 0 {
            lastDownload = download
            callback(download)
        }
        if let callback = options.uploadProgress, upload != lastUpload, upload.completed > 0 {
            lastUpload = upload
            callback(upload)
        }
    }
}

extension CourierError {
    static func tooLarge(_ limit: Int64) -> CourierError {
        CourierError(.responseTooLarge, "the response body is larger than the \(limit)-byte limit")
    }
}

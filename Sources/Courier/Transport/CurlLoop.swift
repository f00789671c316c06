import CCurl
import CCurlShim
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Process-wide libcurl setup, done once: `curl_global_init` is not safe to race, and a peer
/// closing a socket must not kill the process with SIGPIPE.
private let curlGlobalSetup: CURLcode = {
    signal(SIGPIPE, SIG_IGN)
    return curl_global_init(Int(CURL_GLOBAL_ALL))
}()

/// The thread that owns the libcurl multi handle and every easy handle.
///
/// Other threads only `enqueue` commands (under a `LockedValue`) and wake the thread with
/// `curl_multi_wakeup`. Completions resume the callers' continuations right here, which only
/// schedules their tasks elsewhere: one hop in, one hop out per request.
///
/// `@unchecked Sendable`: the `queue` is a `LockedValue`; `multi` is used from other threads only
/// through `curl_multi_wakeup`, which libcurl documents as thread-safe, and in `deinit`, when
/// no thread can use it any more; every other stored `var` is touched only on the loop's own
/// thread (inside `run()`).
final class CurlLoop: @unchecked Sendable {
    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
        case resume(CurlTransfer)
        case shutdown
    }

    /// `CURLOPT_LOW_SPEED_TIME` with a stall timeout: longer than any timeout (about 31
    /// years), so curl's averaging check never ends a transfer; it only wakes the transfer
    /// every second, which calls the progress callback that times the stall.
    static let lowSpeedWakeSeconds = 1_000_000_000

    private let multi: UnsafeMutableRawPointer
    private let configuration: CurlTransport.Configuration
    private let resolveList: UnsafeMutablePointer<curl_slist>?
    /// Open sockets and transfers waiting for a connection (`courier_transport_load`): written
    /// here, read by any thread; freed after the multi handle, whose connections count in it.
    let load: OpaquePointer
    private struct Queue {
        var commands: [Command] = []
        var isShutDown = false
    }
    private let queue = LockedValue(Queue())
    /// Large response-body buffers between bodies; thread-safe (they come back from whichever
    /// thread drops their `Data`).
    let bodyBuffers = BodyBufferPool()

    // MARK: loop thread only
    // Without dynamic exclusivity checks, as `CurlTransfer`'s curl-thread state.
    @exclusivity(unchecked) private var pending: [Command] = []
    @exclusivity(unchecked) private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    @exclusivity(unchecked) private var pool: [EasyHandle] = []
    @exclusivity(unchecked) private var receiveBufferSizes = ReceiveBufferSizes()
    private let streamsToFlush = StreamsToFlush()
    private let passProgress = PassProgress()
    private let multiplexedConnections = MultiplexedConnections()
    private let constantSettings: EasyHandle.Settings.Constant
    /// The proxy of each scheme, read once (`.environment` reads the variables here).
    private let proxies: ResolvedProxy
    private let maxPooledHandles: Int

    init(configuration: CurlTransport.Configuration) throws(CourierError) {
        guard curlGlobalSetup == CURLE_OK else {
            throw CourierError(.configuration, "curl_global_init failed (\(curlGlobalSetup.rawValue))")
        }
        guard let load = courier_transport_load_create() else {
            throw CourierError(.configuration, "out of memory for the transport's counters")
        }
        guard let multi = curl_multi_init() else {
            courier_transport_load_destroy(load)
            throw CourierError(.configuration, "libcurl could not create a multi handle")
        }
        self.multi = multi
        self.load = load
        self.configuration = configuration
        maxPooledHandles = configuration.maxConnections
        proxies = configuration.proxy.resolved()
        constantSettings = EasyHandle.Settings.Constant(
            noProxy: proxies.noProxy,
            trust: TrustStore(
                customBundlePath: configuration.caBundlePath, systemDefaults: configuration.systemTrustStore))
        var list: UnsafeMutablePointer<curl_slist>?
        for entry in configuration.resolve {
            list = curl_slist_append(list, "\(entry.host):\(entry.port):\(entry.address)")
        }
        resolveList = list
        courier_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        courier_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxConnections)
        // Keep every connection we may open, so none is closed only to be opened again.
        courier_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, configuration.maxConnections)
        courier_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        let thread = Thread { [self] in run() }
        thread.name = "courier-curl"
        thread.start()
    }

    deinit {
        // After `shutDown()`, when no other thread can reach the multi handle any more.
        curl_multi_cleanup(multi)
        curl_slist_free_all(resolveList)
        courier_transport_load_destroy(load)
    }

    /// Cancels `transfer` from any thread: its caller is resumed with `CancellationError`, and
    /// a transfer already handed to the loop is removed there.
    func requestCancel(_ transfer: CurlTransfer) {
        if transfer.cancel() { enqueue(.cancel(transfer)) }
    }

    /// Hands a command to the loop thread.
    func enqueue(_ command: Command) {
        let (accepted, wakes) = queue.withLock { queue -> (Bool, Bool) in
            guard !queue.isShutDown else { return (false, false) }
            queue.commands.append(command)
            // A longer queue means an earlier enqueue already woke the loop, which has not
            // drained yet; one wakeup covers both.
            return (true, queue.commands.count == 1)
        }
        // Outside the lock (a system call: threads waiting for the lock would spin meanwhile).
        // The multi handle lives until `deinit`, which cannot run while this method holds `self`.
        if wakes { curl_multi_wakeup(multi) }
        if !accepted, case .add(let transfer) = command {
            transfer.finish(.failure(CourierError(.cancelled, "the transport was shut down")))
        }
    }

    // MARK: The loop

    private func run() {
        var running: Int32 = 0
        while true {
            queue.withLock { swap(&$0.commands, &pending) }
            for command in pending {
                switch command {
                case .add(let transfer): start(transfer)
                case .cancel(let transfer): cancel(transfer)
                case .resume(let transfer):
                    transfer.isReceivePaused = false
                    if let handle = transfer.handle { curl_easy_pause(handle.raw, CURLPAUSE_CONT) }
                case .shutdown:
                    pending.removeAll()
                    shutDown()
                    return
                }
            }
            pending.removeAll(keepingCapacity: true)
            curl_multi_perform(multi, &running)
            streamsToFlush.flush()
            collectCompletions()
            // libcurl 7.88 gives an HTTP/2 stream at most one receive buffer of what it has
            // already read off the socket per pass, and sets no timer for the rest, which waits
            // in its buffers where no poll sees it: a 20 KiB response head read 2 KiB at a time
            // waited for about ten poll timeouts. After a pass that gave such a stream bytes,
            // the next pass runs at once.
            curl_multi_poll(multi, nil, 0, passProgress.take() ? 0 : 1000, nil)
            // At least once a second (the poll's timeout), busy or idle.
            bodyBuffers.trim()
        }
    }

    private func start(_ transfer: CurlTransfer) {
        // Cancelled between enqueue and now: its caller has its CancellationError already.
        guard !transfer.isCancelled else { return }
        let handle: EasyHandle
        do {
            handle = try configuredHandle(for: transfer)
        } catch {
            transfer.finish(.failure(error))
            return
        }
        let code = curl_multi_add_handle(multi, handle.raw)
        guard code == CURLM_OK else {
            recycle(handle)
            let message = String(cString: curl_multi_strerror(code))
            transfer.finish(.failure(CourierError(.transport, "libcurl refused the transfer: \(message)")))
            return
        }
        transfer.handle = handle
        transfer.enterQueue(load)
        active[handle.raw] = transfer
    }

    /// A pooled handle set up for `transfer`, or a new one.
    private func configuredHandle(for transfer: CurlTransfer) throws(CourierError) -> EasyHandle {
        if let pooled = pool.popLast() {
            do {
                try configure(pooled, for: transfer)
                return pooled
            } catch {
                // A used handle can refuse an option that a new one takes: libcurl 7.88
                // refuses CURLOPT_BUFFERSIZE while the handle still holds an earlier
                // transfer's receive buffer, which it has kept after some HTTP/2 transfers.
                // Such a handle is dropped; the transfer gets a new one.
            }
        }
        let handle = try EasyHandle()
        try configure(handle, for: transfer)
        return handle
    }

    private func cancel(_ transfer: CurlTransfer) {
        guard let handle = transfer.handle, active.removeValue(forKey: handle.raw) != nil else { return }
        curl_multi_remove_handle(multi, handle.raw)
        transfer.handle = nil
        transfer.leaveQueue()
        recycle(handle)
        transfer.finish(.failure(CancellationError()))
    }

    private func collectCompletions() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let raw = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            curl_multi_remove_handle(multi, raw)
            guard let transfer = active.removeValue(forKey: raw), let handle = transfer.handle else { continue }
            transfer.handle = nil
            transfer.leaveQueue()
            if transfer.shouldRetryOnFreshConnection(after: result, handle: handle) {
                recycle(handle)
                start(transfer)
                continue
            }
            let outcome = transfer.outcome(code: result, handle: handle)
            recycle(handle, wentWell: result == CURLE_OK && transfer.callbackFailure == nil)
            if result == CURLE_OK, case .buffered = transfer.delivery {
                receiveBufferSizes.record(
                    transfer.origin, bodyBytes: transfer.receivedBytes, size: transfer.receiveBufferSize)
            }
            transfer.finish(outcome)
        }
    }

    /// Returns a handle to the pool: kept as it is after a transfer that went well (the next
    /// one changes only the options that differ), reset after any other.
    private func recycle(_ handle: EasyHandle, wentWell: Bool = false) {
        if wentWell { handle.release() } else { handle.reset() }
        if pool.count < maxPooledHandles { pool.append(handle) }
    }

    private func shutDown() {
        let late = queue.withLock { queue in
            queue.isShutDown = true
            defer { queue.commands.removeAll() }
            return queue.commands
        }
        for case .add(let transfer) in late {
            transfer.finish(.failure(CourierError(.cancelled, "the transport was shut down")))
        }
        for (raw, transfer) in active {
            curl_multi_remove_handle(multi, raw)
            transfer.handle = nil
            transfer.leaveQueue()
            transfer.finish(.failure(CourierError(.cancelled, "the transport was shut down")))
        }
        active.removeAll()
        pool.removeAll()
        bodyBuffers.close()
    }

    // MARK: Setting up a handle

    private func configure(_ handle: EasyHandle, for transfer: CurlTransfer) throws(CourierError) {
        let options = transfer.options
        var settings = EasyHandle.Settings(constant: constantSettings)
        settings.pipeWait = transfer.isHTTPS
        settings.proxy = proxies.route(isHTTPS: transfer.isHTTPS)
        settings.freshConnect = transfer.retriedOnFreshConnection
        if transfer.sendsBody {
            // -1: unknown, sent chunked.
            settings.uploadSize = transfer.bodyLength ?? -1
            if (transfer.bodyLength ?? .max) >= ReceiveBufferSizes.largeUpload {
                settings.uploadBufferSize = ReceiveBufferSizes.largeUploadBuffer
            }
            if transfer.method != .put { settings.customRequest = transfer.method.rawValue }
            transfer.bodyReader = BodyReader(
                body: transfer.body ?? RequestBody(segments: []), length: transfer.bodyLength,
                fileSizes: transfer.bodyFileSizes
            ) { [weak self, weak transfer] in
                if let self, let transfer { self.enqueue(.resume(transfer)) }
            }
        } else if transfer.method == .head {
            settings.noBody = true
        } else if transfer.method != .get {
            settings.customRequest = transfer.method.rawValue
        }
        if let timeout = options.timeout {
            settings.timeoutMilliseconds = (timeout - transfer.timeSpentBeforeRetry).wholeMilliseconds
        }
        settings.connectTimeoutMilliseconds = (options.connectTimeout ?? configuration.connectTimeout).wholeMilliseconds
        // The stall timeout is timed in the progress callback (`CurlTransfer.hasStalled`); curl's
        // low-speed check, set far past any timeout, only has curl call it every second.
        if options.stallTimeout != nil { settings.stallSeconds = Self.lowSpeedWakeSeconds }
        settings.reportsProgress =
            options.uploadProgress != nil || options.downloadProgress != nil || options.stallTimeout != nil
        switch transfer.delivery {
        case .buffered:
            transfer.receiveBufferSize = receiveBufferSizes.size(for: transfer.origin)
            transfer.buffer.pool = bodyBuffers
        case .streaming:
            transfer.receiveBufferSize = ReceiveBufferSizes.streaming
            transfer.streamsToFlush = streamsToFlush
        }
        settings.receiveBufferSize = transfer.receiveBufferSize
        transfer.passProgress = passProgress
        transfer.multiplexedConnections = multiplexedConnections
        try handle.prepare(
            settings, url: transfer.url, headers: transfer.headerList,
            context: Unmanaged.passUnretained(transfer).toOpaque(), resolve: resolveList, load: load)
    }
}

extension Duration {
    /// At least 1 ms (curl reads 0 as "no limit"), at most `ConfigurationBounds.maximumTimeout`:
    /// a `Duration` holds values whose milliseconds overflow an `Int`.
    var wholeMilliseconds: Int {
        let (seconds, attoseconds) = clamped(to: ConfigurationBounds.maximumTimeout).components
        return Swift.max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    /// At least 1 s, at most `ConfigurationBounds.maximumTimeout`.
    var wholeSecondsRoundedUp: Int {
        let (seconds, attoseconds) = clamped(to: ConfigurationBounds.maximumTimeout).components
        return Swift.max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }
}

/// The streams whose waiting reader gets the bytes of the loop's pass once it ended
/// (`StreamBuffer.flush()`). Used on the loop's thread only.
final class StreamsToFlush {
    /// Loop thread only, without dynamic exclusivity checks (as `CurlTransfer`'s state).
    @exclusivity(unchecked) var streams: [StreamBuffer] = []

    func flush() {
        guard !streams.isEmpty else { return }
        for stream in streams { stream.flush() }
        streams.removeAll(keepingCapacity: true)
    }
}

/// The connections known to speak HTTP/2, by remote address and port and local port
/// (`CurlTransfer.connectionKey`), learnt from the answers that came over them. Used on the
/// loop's thread only.
///
/// libcurl sends a request again by itself when its stream was refused (a GOAWAY, or
/// REFUSED_STREAM: never processed, RFC 9113 §8.7), and also when a pooled connection gave
/// nothing back, which on HTTP/1.1 may follow a request the server read and acted on. A request
/// that is not idempotent may go again only in the first case: on a connection known to be
/// HTTP/2 (`curlPrereqCallback`).
final class MultiplexedConnections {
    /// Loop thread only, without dynamic exclusivity checks (as `CurlTransfer`'s state).
    @exclusivity(unchecked) private var keys: Set<Int64> = []

    /// Records which protocol the connection `key` answered in.
    func record(_ key: Int64, multiplexed: Bool) {
        if multiplexed {
            // Bounded: forgetting a connection only makes a resend of a POST on it refused.
            if keys.count >= 4_096 { keys.removeAll(keepingCapacity: true) }
            keys.insert(key)
        } else if !keys.isEmpty {
            // A port used again by an HTTP/1.1 connection.
            keys.remove(key)
        }
    }

    /// Whether the connection `key` answered in HTTP/2.
    func contains(_ key: Int64) -> Bool { keys.contains(key) }
}

/// Whether an HTTP/2 transfer took bytes in the loop's current pass (see `CurlLoop.run()`).
/// Used on the loop's thread only.
final class PassProgress {
    /// Loop thread only, without dynamic exclusivity checks (as `CurlTransfer`'s state).
    @exclusivity(unchecked) var received = false

    /// Whether a transfer took bytes since the last call.
    func take() -> Bool {
        defer { received = false }
        return received
    }
}

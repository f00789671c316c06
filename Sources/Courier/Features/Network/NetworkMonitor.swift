import CPosixShim
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Watches the machine's network through rtnetlink and reports online / offline and the
/// interface kind, without polling.
///
/// One thread of its own waits on a netlink socket subscribed to link, address and route
/// changes (IPv4 and IPv6); after each burst of changes it dumps links and routes again on a
/// second socket, so the status always matches the kernel's tables (the kernel drops a
/// downed device's routes without always saying so). The first dump happens in `init`, so
/// `current` is right from the start.
///
/// ```swift
/// let monitor = try NetworkMonitor()
/// for await status in monitor.statuses() { print(status) }   // "ethernet", "offline", …
/// ```
public final class NetworkMonitor: NetworkStatusSource {
    private let broadcast: NetworkStatusBroadcast
    let wake: (read: Int32, write: Int32)
    private let exited = DispatchSemaphore(value: 0)
    private let stopped = LockedValue(false)

    /// Starts watching the network of the calling process.
    /// - Throws: `CourierError.configuration` when netlink is not available (not Linux, or
    ///   a sandbox without `AF_NETLINK`).
    public convenience init() throws(CourierError) { try self.init(namespace: nil) }

    /// Starts watching the network namespace at `namespace` (`/var/run/netns/<name>`), or the
    /// process's own for nil: the monitor's thread enters it before opening its sockets.
    init(namespace: String?) throws(CourierError) {
        var fds: [Int32] = [0, 0]
        // Close-on-exec from the start, like the netlink socket: a process the app starts
        // must not inherit the monitor's descriptors.
        guard courier_pipe_cloexec(&fds) == 0 else { throw Self.failure("cannot make a pipe") }
        wake = (fds[0], fds[1])
        broadcast = NetworkStatusBroadcast(.offline)
        let startup = Startup()
        let reader = NetlinkReader(wake: fds[0], broadcast: broadcast, namespace: namespace)
        let exited = self.exited
        let thread = Thread {
            reader.run(startup)
            exited.signal()
        }
        thread.name = "courier-netlink"
        thread.start()
        startup.ready.wait()
        if case .failure(let error) = startup.result.withLock({ $0 }) {
            exited.wait()
            close(fds[0])
            close(fds[1])
            stopped.withLock { $0 = true }
            throw error
        }
    }

    deinit { stop() }

    /// The status now.
    public var current: NetworkStatus { broadcast.current }

    /// The current status, then each change, until ``stop()``.
    public func statuses() -> AsyncStream<NetworkStatus> { broadcast.statuses() }

    /// Stops watching: the thread ends and every `statuses()` sequence finishes. Idempotent.
    public func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        exited.wait()
        close(wake.read)
        close(wake.write)
        broadcast.finish()
    }

    static func failure(_ what: String) -> CourierError {
        CourierError(.configuration, "network monitor: \(what) (errno \(errno))")
    }

    /// How the thread tells `init` that the first dump is done, or why it failed.
    final class Startup: Sendable {
        let ready = DispatchSemaphore(value: 0)
        let result = LockedValue<Result<Void, CourierError>>(.success(()))

        func finish(_ outcome: Result<Void, CourierError>) {
            result.withLock { $0 = outcome }
            ready.signal()
        }
    }
}

/// The monitor's thread: its two sockets, the table, the loop.
private final class NetlinkReader: Sendable {
    private let wake: Int32
    private let broadcast: NetworkStatusBroadcast
    private let namespace: String?

    init(wake: Int32, broadcast: NetworkStatusBroadcast, namespace: String?) {
        self.wake = wake
        self.broadcast = broadcast
        self.namespace = namespace
    }

    func run(_ startup: NetworkMonitor.Startup) {
        let events: NetlinkSocket
        let dumps: NetlinkSocket
        do {
            if let namespace { try Self.enter(namespace: namespace) }
            events = try NetlinkSocket(groups: NetlinkMessage.groups)
            dumps = try NetlinkSocket(groups: 0)
            broadcast.publish(try dumps.status())
        } catch {
            startup.finish(.failure(error))
            return
        }
        startup.finish(.success(()))
        var watched = [
            pollfd(fd: events.fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&watched, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if watched[1].revents != 0 { return }
            guard watched[0].revents != 0 else { continue }
            // A burst of changes (or ENOBUFS, events lost) becomes one dump.
            events.drain()
            if let status = try? dumps.status() { broadcast.publish(status) }
        }
    }

    /// Moves the calling thread into the network namespace at `path` (setns(2); looked up
    /// with dlsym because Swift's Glibc module does not import it).
    private static func enter(namespace path: String) throws(CourierError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw NetworkMonitor.failure("cannot open \(path)") }
        defer { close(fd) }
        typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "setns") else { throw NetworkMonitor.failure("setns is not available") }
        let setNamespace = unsafeBitCast(symbol, to: SetNamespace.self)
        guard setNamespace(fd, 0x4000_0000) == 0 else {  // CLONE_NEWNET
            throw NetworkMonitor.failure("cannot enter \(path)")
        }
    }
}

/// One `AF_NETLINK` / `NETLINK_ROUTE` socket, closed on deinit.
private final class NetlinkSocket {
    let fd: Int32
    private var sequence: UInt32 = 0
    private static let bufferSize = 64 << 10

    /// - Parameter groups: the multicast groups to join (0: none, for dumps).
    init(groups: UInt32) throws(CourierError) {
        fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // NETLINK_ROUTE
        guard fd >= 0 else { throw NetworkMonitor.failure("cannot open a netlink socket") }
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid, nl_groups; }
        var address = [UInt8](repeating: 0, count: 12)
        address.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt16(AF_NETLINK), toByteOffset: 0, as: UInt16.self)
            raw.storeBytes(of: groups, toByteOffset: 8, as: UInt32.self)
        }
        let bound = address.withUnsafeBytes { raw in
            bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), 12)
        }
        guard bound == 0 else {
            close(fd)
            throw NetworkMonitor.failure("cannot bind a netlink socket")
        }
        if groups == 0 {
            // A dump is answered at once; a kernel that never answers must not hang the thread.
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    deinit { close(fd) }

    /// Reads and forgets every message waiting.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: Self.bufferSize)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { continue }
            if count < 0, errno == EINTR || errno == ENOBUFS { continue }
            return
        }
    }

    /// Dumps links and routes and computes the status.
    func status() throws(CourierError) -> NetworkStatus {
        var table = NetworkTable()
        for type in [NetlinkMessage.getLink, NetlinkMessage.getRoute] {
            for message in try dump(type) { table.apply(message) }
        }
        return table.status
    }

    private func dump(_ type: UInt16) throws(CourierError) -> [NetlinkMessage] {
        sequence &+= 1
        let number = sequence
        let request = NetlinkMessage.dumpRequest(type: type, sequence: number)
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else { throw NetworkMonitor.failure("cannot send a netlink dump request") }
        var buffer = [UInt8](repeating: 0, count: Self.bufferSize)
        var messages: [NetlinkMessage] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw NetworkMonitor.failure("no answer to a netlink dump") }
            let parsed = buffer.withUnsafeBytes { NetlinkMessage.parse(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            for message in parsed {
                switch message {
                case .done(let sequence) where sequence == number:
                    return messages
                case .error(let code, let sequence) where sequence == number && code != 0:
                    throw CourierError(.configuration, "network monitor: the netlink dump failed (errno \(code))")
                default:
                    messages.append(message)
                }
            }
        }
    }
}

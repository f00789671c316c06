import CPosixShim
import Glibc

/// An error from a POSIX socket call made by the test servers.
public struct SocketError: Error, CustomStringConvertible, Sendable {
    /// The call that failed, e.g. `bind`.
    public let call: String
    /// The `errno` value at the time of failure.
    public let code: Int32

    init(_ call: String, code: Int32 = errno) {
        self.call = call
        self.code = code
    }

    /// `bind failed: Address already in use (errno 98)`.
    public var description: String {
        "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
    }
}

/// Thin wrappers over the POSIX socket calls, shared by the test servers.
///
/// Everything works on raw descriptors; whoever opens a descriptor closes it.
enum Socket {
    /// Opens a TCP listener on `host:port` (port 0 picks an ephemeral port). With
    /// `sharingPort`, the listener takes `SO_REUSEPORT` too, so that ``holdPort(host:port:)``
    /// can bind the port beside it.
    /// - Returns: the listening descriptor and the bound port.
    static func listen(
        host: String, port: UInt16, backlog: Int32, sharingPort: Bool = false
    ) throws -> (fd: Int32, port: UInt16) {
        let fd = try boundSocket(
            host: host, port: port, options: sharingPort ? [SO_REUSEADDR, SO_REUSEPORT] : [SO_REUSEADDR])
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw SocketError("listen", code: code)
        }
        return (fd, try localPort(of: fd))
    }

    /// Binds a free port of `host` without listening and without `SO_REUSEADDR`: a connect to
    /// it is refused, and no other socket can bind it while the descriptor is open.
    /// - Returns: the descriptor, or `nil` when no port could be bound.
    static func bindRefusingPort(host: String) -> Int32? {
        try? boundSocket(host: host, port: 0, options: [])
    }

    /// Binds, without listening, the port of a listener made with `sharingPort` while that
    /// listener still listens: the socket takes `SO_REUSEPORT` only. It never receives a
    /// connection (only listening sockets do), and once the listener closes it keeps the port:
    /// a connect is refused, a bind with `SO_REUSEADDR` or none fails, and the kernel never
    /// hands the port to a bind to port 0. (Binding after the listener closed instead leaves a
    /// moment in which the port is free, and fails without `SO_REUSEADDR` while the port has
    /// connections in `TIME_WAIT`; with it, other listeners can share the port.)
    /// - Returns: the descriptor, or `nil` when the port could not be bound.
    static func holdPort(host: String, port: UInt16) -> Int32? {
        try? boundSocket(host: host, port: port, options: [SO_REUSEPORT])
    }

    /// A TCP socket (close-on-exec) with each `SOL_SOCKET` option of `options` turned on,
    /// bound to `host:port`.
    private static func boundSocket(host: String, port: UInt16, options: [Int32]) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        var yes: Int32 = 1
        for option in options { setsockopt(fd, SOL_SOCKET, option, &yes, socklen_t(MemoryLayout<Int32>.size)) }
        guard var address = ipv4Address(host: host, port: port) else {
            close(fd)
            throw SocketError("inet_pton(\(host))", code: EINVAL)
        }
        guard bind(fd, &address) == 0 else {
            let code = errno
            close(fd)
            throw SocketError("bind(\(host):\(port))", code: code)
        }
        return fd
    }

    /// `host:port` as a socket address; `nil` when `host` is not an IPv4 address.
    private static func ipv4Address(host: String, port: UInt16) -> sockaddr_in? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        return inet_pton(AF_INET, host, &address.sin_addr) == 1 ? address : nil
    }

    /// Binds `fd` to `address`; 0 on success, as `bind(2)`.
    private static func bind(_ fd: Int32, _ address: inout sockaddr_in) -> Int32 {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// The local port a socket is bound to.
    static func localPort(of fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw SocketError("getsockname") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Starts a non-blocking connect to `127.0.0.1:port`.
    /// - Returns: the descriptor; the connection may still be in progress.
    static func connectNonBlocking(host: String, port: UInt16) throws -> Int32 {
        let fd = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 && errno != EINPROGRESS {
            let code = errno
            close(fd)
            throw SocketError("connect", code: code)
        }
        return fd
    }

    /// Accepts one connection; `nil` when nothing is pending or the call was interrupted.
    /// The connection is close-on-exec from the start, like every descriptor of this module:
    /// a child process (nginx, openssl) another thread starts meanwhile never inherits it.
    static func accept(_ listener: Int32) -> Int32? {
        let fd = courier_accept_cloexec(listener)
        guard fd >= 0 else { return nil }
        return fd
    }

    /// Makes a pipe whose two ends are close-on-exec from the start (`pipe2`, not `pipe` and
    /// then `fcntl`, which leaves a window for another thread's child to inherit them).
    /// - Returns: whether the pipe was made (`errno` says why not).
    static func makePipe(_ fds: inout [Int32]) -> Bool {
        courier_pipe_cloexec(&fds) == 0
    }

    /// Disables Nagle so separately written pieces leave at once.
    static func setNoDelay(_ fd: Int32) {
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Makes the next `close` send a TCP RST instead of a FIN.
    static func setLingerZero(_ fd: Int32) {
        var value = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
    }

    /// Shuts both directions down, waking any thread blocked on the descriptor.
    static func shutdownBoth(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Writes all bytes; `false` when the peer went away.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var pointer = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let written = send(fd, pointer, remaining, Int32(MSG_NOSIGNAL))
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            remaining -= written
            pointer += written
        }
        return true
    }

    /// Writes all bytes of `bytes`; `false` when the peer went away.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }

    /// Reads up to `capacity` bytes; 0 on end of stream or error.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            return max(count, 0)
        }
    }

    /// Waits until one of `fds` is readable (or hung up) or `timeoutMilliseconds` pass (-1: forever).
    /// - Returns: the indices of the ready descriptors.
    static func poll(_ fds: [Int32], events: Int16 = Int16(POLLIN), timeoutMilliseconds: Int32) -> [Int] {
        var entries = fds.map { pollfd(fd: $0, events: events, revents: 0) }
        let result = Glibc.poll(&entries, nfds_t(entries.count), timeoutMilliseconds)
        guard result > 0 else { return [] }
        return entries.indices.filter { entries[$0].revents != 0 }
    }
}

import Dispatch
import Foundation
import Glibc

extension TestServer {
    /// A listener that accepts connections and then never reads or answers — for total and
    /// stall timeout tests.
    /// - Throws: `SocketError` when the socket cannot be bound.
    public static func blackHole(host: String = "127.0.0.1") throws -> BlackHoleServer {
        try BlackHoleServer(host: host)
    }

    /// A listening socket whose accept queue is already full, so a new connect stays pending
    /// until the client's connect timeout fires.
    /// - Throws: `SocketError` when the socket cannot be bound or filled.
    public static func fullBacklog(host: String = "127.0.0.1") throws -> FullBacklogServer {
        try FullBacklogServer(host: host)
    }

    /// A port that refuses every connection from the start: bound without listening, and
    /// without `SO_REUSEADDR`, so that no other socket can take it while it is held — for
    /// connection-failure tests (a stopped server's port is free for a moment before the
    /// server reserves it again).
    /// - Throws: `SocketError` when no port can be bound.
    public static func refusingPort(host: String = "127.0.0.1") throws -> RefusingPort {
        try RefusingPort(host: host)
    }
}

/// A bound, never listening socket: a connect to ``port`` is refused while it is held.
public final class RefusingPort: Sendable {
    private let fd = Locked<Int32?>(nil)
    /// The bound port.
    public let port: UInt16
    /// `http://HOST:PORT`.
    public let baseURL: URL

    init(host: String) throws {
        guard let descriptor = Socket.bindRefusingPort(host: host) else {
            throw SocketError("bind(\(host):0)")
        }
        do {
            port = try Socket.localPort(of: descriptor)
        } catch {
            close(descriptor)
            throw error
        }
        fd.withLock { $0 = descriptor }
        baseURL = URL(string: "http://\(host):\(port)")!
    }

    deinit {
        stop()
    }

    /// Releases the port. Idempotent.
    public func stop() {
        if let descriptor = fd.withLock({ fd -> Int32? in
            defer { fd = nil }
            return fd
        }) {
            close(descriptor)
        }
    }
}

/// Accepts TCP connections and holds them open without reading or writing a byte.
public final class BlackHoleServer: Sendable {
    /// What the accept thread holds, so that releasing the `BlackHoleServer` runs its `deinit`.
    private final class Core: Sendable {
        struct State {
            var stopped = false
            var held: [Int32] = []
            var accepted = 0
        }

        let listenFD: Int32
        let wake: (read: Int32, write: Int32)
        let state = Locked(State())
        let done = DispatchSemaphore(value: 0)

        init(listenFD: Int32, wake: (read: Int32, write: Int32)) {
            self.listenFD = listenFD
            self.wake = wake
        }

        deinit {
            close(wake.read)
            close(wake.write)
        }

        func acceptLoop() {
            while true {
                let ready = Socket.poll([listenFD, wake.read], timeoutMilliseconds: 1000)
                if state.withLock({ $0.stopped }) { break }
                guard ready.contains(0), let fd = Socket.accept(listenFD) else { continue }
                state.withLock {
                    $0.held.append(fd)
                    $0.accepted += 1
                }
            }
            let held = state.withLock { $0.held }
            for fd in held { close(fd) }
            close(listenFD)
            done.signal()
        }

        func stop() {
            let first = state.withLock { state -> Bool in
                defer { state.stopped = true }
                return !state.stopped
            }
            guard first else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(wake.write, &byte, 1)
            done.wait()
        }
    }

    private let core: Core
    /// The bound port.
    public let port: UInt16
    /// `http://HOST:PORT`.
    public let baseURL: URL

    init(host: String) throws {
        let listener = try Socket.listen(host: host, port: 0, backlog: 128)
        var fds: [Int32] = [0, 0]
        guard Socket.makePipe(&fds) else {
            close(listener.fd)
            throw SocketError("pipe")
        }
        let core = Core(listenFD: listener.fd, wake: (fds[0], fds[1]))
        self.core = core
        port = listener.port
        baseURL = URL(string: "http://\(host):\(listener.port)")!
        let thread = Thread { core.acceptLoop() }
        thread.name = "BlackHoleServer \(listener.port)"
        thread.start()
    }

    deinit {
        core.stop()
    }

    /// How many connections were accepted so far.
    public var acceptedConnections: Int { core.state.withLock { $0.accepted } }

    /// Closes the listener and every held connection, waiting for the accept thread. Idempotent.
    public func stop() {
        core.stop()
    }
}

/// A listening socket with backlog 0 whose queue the server fills itself, so that a client's
/// connect to ``port`` cannot complete.
public final class FullBacklogServer: Sendable {
    private let listenFD: Int32
    private let fillers: [Int32]
    private let stopped = Locked(false)
    /// The bound port.
    public let port: UInt16
    /// `http://HOST:PORT`.
    public let baseURL: URL

    init(host: String) throws {
        let listener = try Socket.listen(host: host, port: 0, backlog: 0)
        var fillers: [Int32] = []
        // Connect until one connect stays pending: then the accept queue is full and the
        // kernel drops further SYNs. The bounded waits detect "pending", they do not
        // synchronise with anything.
        var full = false
        for _ in 0..<64 {
            guard let fd = try? Socket.connectNonBlocking(host: host, port: listener.port) else { break }
            fillers.append(fd)
            let ready = Socket.poll([fd], events: Int16(POLLOUT), timeoutMilliseconds: 200)
            if ready.isEmpty {
                full = true
                break
            }
        }
        guard full else {
            for fd in fillers { close(fd) }
            close(listener.fd)
            throw SocketError("filling the accept queue", code: EAGAIN)
        }
        self.listenFD = listener.fd
        self.fillers = fillers
        self.port = listener.port
        self.baseURL = URL(string: "http://\(host):\(listener.port)")!
    }

    deinit {
        stop()
    }

    /// Closes the listener and the filler connections. Idempotent.
    public func stop() {
        let first = stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        for fd in fillers { close(fd) }
        close(listenFD)
    }
}

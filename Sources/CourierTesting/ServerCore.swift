import Dispatch
import Foundation
import Glibc

/// The shared state and threads behind a ``TestServer``.
///
/// Threads hold this object, not the `TestServer`, so that dropping the last `TestServer`
/// reference runs its `deinit`, which stops everything.
final class ServerCore: Sendable {
    struct Route: Sendable {
        let method: String?
        let path: String
        let handler: @Sendable (RecordedRequest) -> ScriptedResponse
    }

    struct State {
        var stopped = false
        var connections: [Int: Int32] = [:]
        var acceptedConnections = 0
        var nextConnectionID = 0
        var requestCount = 0
        /// A bound, non-listening socket holding the port for the server's life (closed in deinit).
        var reservedPortFD: Int32?
        var records: [RecordedRequest] = []
        var queue: [ScriptedResponse] = []
        var routes: [Route] = []
        var validBearerTokens: Set<String>? = nil
        var sendsDateHeader = true
    }

    /// The largest request body kept in memory (`/upload` streams and has no limit).
    static let maximumStoredBody = 512 * 1024 * 1024

    let host: String
    let port: UInt16
    let state = Locked(State())
    private let listenFD: Int32
    /// A pipe whose read end becomes readable (and stays so) when the server stops; every wait
    /// in the server polls it, so `stop()` interrupts delays, stalls and trickles.
    let wakeRead: Int32
    private let wakeWrite: Int32
    private let threads = DispatchGroup()
    /// Broadcast whenever a connection ends or a request is recorded, for ``waitUntil(timeout:_:)``.
    private let changed = NSCondition()

    init(host: String, port: UInt16, backlog: Int32 = 1024) throws {
        let listener = try Socket.listen(host: host, port: port, backlog: backlog, sharingPort: true)
        var fds: [Int32] = [0, 0]
        guard Socket.makePipe(&fds) else {
            let code = errno
            close(listener.fd)
            throw SocketError("pipe", code: code)
        }
        self.host = host
        self.port = listener.port
        self.listenFD = listener.fd
        self.wakeRead = fds[0]
        self.wakeWrite = fds[1]
        // Keep the port while this server lives: a test that goes on sending to a stopped
        // server must see "connection refused", never another test's server that was given
        // the same port in the parallel run. Held from the start, so there is no moment
        // between the listener's close and the hold in which the port is free.
        let held = Socket.holdPort(host: host, port: listener.port)
        state.withLock { $0.reservedPortFD = held }
    }

    deinit {
        // Every thread holds a strong reference, so none is running any more.
        close(wakeRead)
        close(wakeWrite)
        if let reserved = state.withLock({ $0.reservedPortFD }) { close(reserved) }
    }

    /// Starts the accept thread.
    func start(name: String) {
        threads.enter()
        let thread = Thread { [self] in acceptLoop() }
        thread.name = name
        thread.start()
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Stops accepting, shuts down every connection and waits (bounded) for all threads.
    func stop() {
        let first = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.stopped = true
            // The listener stops listening now (a connect is refused from here on), not when the
            // accept thread gets to close it: on a loaded machine that thread may not run for
            // seconds. Still ours: the accept thread closes it only once it sees `stopped`.
            Socket.shutdownBoth(listenFD)
            // Under the lock: a connection thread removes its descriptor before closing it,
            // so every descriptor here is still ours.
            for fd in state.connections.values { Socket.shutdownBoth(fd) }
            return true
        }
        if first {
            var byte: UInt8 = 1
            _ = Glibc.write(wakeWrite, &byte, 1)
        }
        let finished = threads.wait(timeout: .now() + .seconds(10)) == .success
        // A stopped server answers nothing more: let go of the handlers, which often capture
        // the object that owns the server (a cycle that would outlive both). Released outside
        // the lock, as their captures' deinits may stop this server again.
        if finished {
            let handlers = state.withLock { state in
                defer {
                    state.routes.removeAll()
                    state.queue.removeAll()
                }
                return (state.routes, state.queue)
            }
            withExtendedLifetime(handlers) {}
        }
    }

    /// Waits for `duration` unless the server stops first.
    /// - Returns: `false` when the server is stopping.
    func pause(_ duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { return !isStopped }
            // At most a day per poll: `seconds * 1000` overflowed for `.seconds(Int64.max)` ("never").
            let (seconds, attoseconds) = min(left, .seconds(86_400)).components
            let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
            if !Socket.poll([wakeRead], timeoutMilliseconds: Int32(clamping: milliseconds + 1)).isEmpty { return false }
        }
    }

    /// Blocks until `condition` holds for the state, or `timeout` passes. Re-checked whenever a
    /// connection ends or a request is recorded.
    /// - Returns: whether the condition was met.
    func waitUntil(timeout: Duration, _ condition: (State) -> Bool) -> Bool {
        // A division (`components` trap past `Int64.max` seconds), at most about 31 years: the
        // condition's wait converts the date to whole seconds.
        let deadline = Date().addingTimeInterval(min(timeout / .seconds(1), 1e9))
        changed.lock()
        defer { changed.unlock() }
        while !state.withLock({ condition($0) }) {
            if !changed.wait(until: deadline) { return state.withLock { condition($0) } }
        }
        return true
    }

    /// Wakes ``waitUntil(timeout:_:)`` callers.
    func signalChange() {
        changed.lock()
        changed.broadcast()
        changed.unlock()
    }

    // MARK: - Accepting

    private func acceptLoop() {
        defer {
            close(listenFD)
            threads.leave()
        }
        while true {
            // The timeout is a safety net; `stop()` wakes the poll through the pipe.
            let ready = Socket.poll([listenFD, wakeRead], timeoutMilliseconds: 1000)
            if isStopped { return }
            guard ready.contains(0), let fd = Socket.accept(listenFD) else { continue }
            Socket.setNoDelay(fd)
            let id = state.withLock { state -> Int? in
                guard !state.stopped else { return nil }
                state.acceptedConnections += 1
                state.nextConnectionID += 1
                state.connections[state.nextConnectionID] = fd
                return state.nextConnectionID
            }
            guard let id else {
                close(fd)
                return
            }
            threads.enter()
            let thread = Thread { [self] in
                serve(fd: fd, id: id)
                state.withLock { _ = $0.connections.removeValue(forKey: id) }
                close(fd)
                signalChange()
                threads.leave()
            }
            thread.name = "TestServer connection \(id)"
            thread.start()
        }
    }

    // MARK: - Choosing a response

    /// Records `request` and picks what answers it: the scripted queue, then custom routes,
    /// then the built-in routes.
    func respond(to request: RecordedRequest) -> ScriptedResponse {
        enum Choice {
            case scripted(ScriptedResponse)
            case route(@Sendable (RecordedRequest) -> ScriptedResponse)
            case builtIn(Set<String>?)
        }
        let choice = state.withLock { state -> Choice in
            state.requestCount += 1
            state.records.append(request)
            if !state.queue.isEmpty { return .scripted(state.queue.removeFirst()) }
            let path = request.path
            // Later registrations win, so a test can override an earlier route.
            if let route = state.routes.last(where: {
                $0.path == path && ($0.method == nil || $0.method == request.method)
            }) {
                return .route(route.handler)
            }
            return .builtIn(state.validBearerTokens)
        }
        signalChange()
        switch choice {
        case .scripted(let response): return response
        case .route(let handler): return handler(request)
        case .builtIn(let tokens): return BuiltInRoutes(validBearerTokens: tokens).respond(to: request)
        }
    }
}

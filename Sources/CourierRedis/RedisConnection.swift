import CHiredis
import CourierLocking
import Foundation

/// A reply from Redis, copied out of hiredis's reply tree.
enum RedisReply: Sendable, Equatable {
    case string(Data)
    case integer(Int64)
    case array([RedisReply])
    case null
    case status(String)
    case error(String)

    var data: Data? {
        if case .string(let data) = self { return data }
        return nil
    }

    var integer: Int64? {
        switch self {
        case .integer(let value): return value
        case .string(let data): return Int64(String(decoding: data, as: UTF8.self))
        default: return nil
        }
    }

    var array: [RedisReply]? {
        if case .array(let items) = self { return items }
        return nil
    }
}

/// Why a command got no reply.
enum RedisFailure: Error, Equatable {
    /// No connection could be made (refused, timed out, AUTH refused).
    case connect(String)
    /// The command timed out or the connection broke; the connection was dropped.
    case io(String)
    /// The circuit breaker is open: Redis failed recently and is not asked again yet.
    case unavailable
    /// Waited too long in the queue behind slower commands.
    case expired
}

/// One blocking hiredis connection. Not thread-safe: a `RedisClient` uses it from its own
/// serial queue only, never from the curl thread or the cooperative pool.
///
/// Connect and command timeouts are set on the socket (hiredis `SO_RCVTIMEO`/`SO_SNDTIMEO`),
/// and each command has a deadline of its own (a reply dripped a byte at a time passes every
/// read's timeout), so a Redis that stops answering, or answers too slowly, costs at most one
/// command timeout; after any I/O error the context is freed (hiredis contexts are unusable
/// after one) and the next command reconnects.
final class RedisConnection {
    struct Endpoint: Sendable {
        var host: String
        var port: Int
        var username: String?
        var password: String?
        var database: Int
        var connectTimeout: Duration
        var commandTimeout: Duration
    }

    let endpoint: Endpoint
    private var context: UnsafeMutablePointer<redisContext>?
    /// The command on the wire, for its deadline (see `run`).
    private let deadline = Deadline()
    private var commandNumber: UInt64 = 0

    init(endpoint: Endpoint) { self.endpoint = endpoint }

    /// Deadline timers scheduled and not yet fired (tests).
    var pendingDeadlines: Int { deadline.pendingTimers }

    deinit { close() }

    func close() {
        if let context { redisFree(context) }
        context = nil
    }

    /// Runs one command, connecting first when needed.
    ///
    /// The socket's timeout bounds each read, not the reply: a server that sends a byte now and
    /// then kept the command (and every command queued behind it) waiting for as long as it
    /// liked. A deadline of `commandTimeout` for the whole command shuts the socket down, which
    /// ends the blocked read and fails the command.
    func run(_ arguments: [Data]) throws(RedisFailure) -> RedisReply {
        if context == nil { try connect() }
        guard let context else { throw .connect("no context") }
        commandNumber += 1
        deadline.arm(commandNumber, socket: context.pointee.fd, after: endpoint.commandTimeout)
        let reply = Self.command(context, arguments)
        let timedOut = deadline.disarm()
        guard let reply, !timedOut else {
            let message = timedOut ? "the command took longer than its timeout" : Self.errorText(context)
            close()
            throw .io(message)
        }
        return reply
    }

    private func connect() throws(RedisFailure) {
        let made = redisConnectWithTimeout(endpoint.host, Int32(endpoint.port), Self.timeval(endpoint.connectTimeout))
        guard let made else { throw .connect("out of memory") }
        if made.pointee.err != 0 {
            let message = Self.errorText(made)
            redisFree(made)
            throw .connect(message)
        }
        // hiredis opens its socket without close-on-exec: set it, so a process the app starts
        // does not inherit (and hold open) the connection.
        let fd = made.pointee.fd
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
        redisSetTimeout(made, Self.timeval(endpoint.commandTimeout))
        context = made
        do {
            if let password = endpoint.password {
                var auth = [Data("AUTH".utf8)]
                if let username = endpoint.username { auth.append(Data(username.utf8)) }
                auth.append(Data(password.utf8))
                // The password never goes into an error message.
                if case .error = try run(auth) { throw RedisFailure.connect("AUTH was refused") }
            }
            if endpoint.database != 0 {
                if case .error(let text) = try run([Data("SELECT".utf8), Data(String(endpoint.database).utf8)]) {
                    throw RedisFailure.connect("SELECT failed: " + text)
                }
            }
        } catch {
            close()
            throw error as? RedisFailure ?? .connect("setup failed")
        }
    }

    private static func command(_ context: UnsafeMutablePointer<redisContext>, _ arguments: [Data]) -> RedisReply? {
        var pointers: [UnsafePointer<CChar>?] = []
        var lengths: [Int] = []
        var buffers: [UnsafeMutablePointer<CChar>] = []
        defer { for buffer in buffers { buffer.deallocate() } }
        for argument in arguments {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, argument.count))
            argument.withUnsafeBytes { raw in
                if let base = raw.baseAddress {
                    buffer.update(from: base.assumingMemoryBound(to: CChar.self), count: raw.count)
                }
            }
            buffers.append(buffer)
            pointers.append(UnsafePointer(buffer))
            lengths.append(argument.count)
        }
        let raw = pointers.withUnsafeMutableBufferPointer { argv in
            lengths.withUnsafeBufferPointer { argvlen in
                redisCommandArgv(context, Int32(arguments.count), argv.baseAddress, argvlen.baseAddress)
            }
        }
        guard let raw else { return nil }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        defer { freeReplyObject(raw) }
        return convert(reply)
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply {
        let value = reply.pointee
        func text() -> Data {
            guard let str = value.str else { return Data() }
            return Data(bytes: str, count: value.len)
        }
        switch value.type {
        case REDIS_REPLY_STRING: return .string(text())
        case REDIS_REPLY_INTEGER: return .integer(value.integer)
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_STATUS: return .status(String(decoding: text(), as: UTF8.self))
        case REDIS_REPLY_ERROR: return .error(String(decoding: text(), as: UTF8.self))
        case REDIS_REPLY_ARRAY:
            var items: [RedisReply] = []
            for index in 0..<value.elements {
                if let element = value.element[index] { items.append(convert(element)) } else { items.append(.null) }
            }
            return .array(items)
        default: return .null
        }
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return bytes.isEmpty ? "error \(context.pointee.err)" : String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func timeval(_ duration: Duration) -> timeval {
        let (seconds, attoseconds) = duration.components
        return Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}

/// The deadline of the command a `RedisConnection` has on the wire: past it, the socket is
/// shut down (not closed: the connection still owns the descriptor, which stays valid until
/// the command has returned and `disarm` was called).
///
/// One timer at most is pending per connection. A timer per command stayed pending for the
/// whole timeout after the reply (a cancelled `asyncAfter` block is not removed either): at
/// 10,000 commands/s and a 30 s timeout, 300,000 of them. Arming only records the command's
/// deadline; a timer is scheduled when none is pending, and when it fires early for the
/// command then running (it was set for an earlier one) it is set again for that command's
/// deadline. It is never late: every command of a connection has the same timeout, and
/// commands run one after another, so a pending timer is due no later than the running
/// command's deadline.
private final class Deadline: Sendable {
    private struct Running {
        var number: UInt64
        var socket: Int32
        var due: DispatchTime
        var expired = false
    }

    private struct State {
        var running: Running?
        /// Timers scheduled and not yet fired: 0 or 1.
        var scheduled = 0
    }

    private static let queue = DispatchQueue(label: "courier.redis.deadline")
    private let state = LockedValue(State())

    /// Timers scheduled and not yet fired (tests).
    var pendingTimers: Int { state.withLock { $0.scheduled } }

    /// Starts the deadline of command `number` on `socket`.
    func arm(_ number: UInt64, socket: Int32, after timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
        let due = DispatchTime.now() + .nanoseconds(max(1, nanoseconds))
        let schedules = state.withLock { state -> Bool in
            state.running = Running(number: number, socket: socket, due: due)
            guard state.scheduled == 0 else { return false }
            state.scheduled = 1
            return true
        }
        if schedules { schedule(at: due) }
    }

    /// Ends the deadline of the command that has returned (its timer, if pending, stays for
    /// the next command).
    /// - Returns: whether it had expired (the socket was shut down).
    func disarm() -> Bool {
        state.withLock { state in
            defer { state.running = nil }
            return state.running?.expired ?? false
        }
    }

    private func schedule(at due: DispatchTime) {
        Self.queue.asyncAfter(deadline: due) { [weak self] in self?.fire() }
    }

    /// The timer fired: shuts the running command's socket down when its deadline has passed,
    /// or sets the timer again for it when it started after the timer was set.
    private func fire() {
        let next = state.withLock { state -> DispatchTime? in
            guard var command = state.running, !command.expired else {
                state.scheduled = 0
                return nil
            }
            guard DispatchTime.now() >= command.due else { return command.due }
            command.expired = true
            state.running = command
            state.scheduled = 0
            _ = Glibc.shutdown(command.socket, Int32(SHUT_RDWR))
            return nil
        }
        if let next { schedule(at: next) }
    }
}

import CourierLocking
import Foundation
import Testing

@testable import CourierRedis
@testable import CourierTesting

/// A Redis (or whatever listens on its port) that answers, but too slowly to be useful.
@Suite struct RedisHostileServerTests {
    /// Every command is answered with a 2,400-byte bulk reply sent one byte every 25 ms (60 s
    /// in all): each byte comes well within the command timeout, which the socket applied
    /// to each read, so the command waited for the whole reply, and every command queued behind
    /// it (the cache reads of every call) too. The command must end long before the reply does.
    /// (Measured in bytes the server got out, not in seconds: under ThreadSanitizer, with the
    /// whole suite running, the 500 ms timeout took 15 s to be seen.) After a quick reply, the
    /// connection's pending deadline timer was set for that command and fires before this one's
    /// deadline: it is set again, and the dripped reply still ends at the command timeout.
    @Test(arguments: [0, 1]) func aReplyDrippedByteByByteCostsOneCommandTimeout(quickRepliesFirst: Int) async throws {
        let replyBytes = 2_400
        let server = try DrippingServer(replyBytes: replyBytes, quickReplies: quickRepliesFirst)
        defer { server.stop() }
        var configuration = RedisFleet.Configuration(port: Int(server.port), identityKey: RedisTestServer.identityKey)
        configuration.connectTimeout = .seconds(10)
        configuration.commandTimeout = .milliseconds(500)
        // Open until the test has looked, however busy the machine.
        configuration.retryAfter = .seconds(600)
        let fleet = try RedisFleet(configuration: configuration)
        for _ in 0..<quickRepliesFirst {
            #expect(await fleet.client.run([Data("PING".utf8)]) == .success(.status("PONG")))
        }
        let reply = await fleet.client.run([Data("PING".utf8)])
        guard case .failure(.io) = reply else {
            Issue.record("expected the command to fail on its timeout, got \(reply)")
            return
        }
        // The reply's bytes with its framing; the server stops when the client has gone.
        let whole = replyBytes + "$\(replyBytes)\r\n\r\n".utf8.count
        server.stop()
        #expect(server.bytesSent < whole, "the command waited for the whole dripped reply")
        #expect(!fleet.isAvailable)
        #expect(fleet.client.pendingDeadlines <= 1)
    }
}

/// Accepts connections and answers the first bytes of each with a bulk reply it writes one
/// byte at a time, `interval` apart.
final class DrippingServer: Sendable {
    private final class Core: Sendable {
        let listener: Int32
        let stopped = LockedValue(false)
        let sent = LockedValue(0)
        let done = DispatchSemaphore(value: 0)

        init(listener: Int32) { self.listener = listener }

        var isStopped: Bool { stopped.withLock { $0 } }

        func serve(_ reply: [UInt8], pause: useconds_t, quickReplies: Int) {
            var connections: [Int32] = []
            defer {
                for connection in connections { close(connection) }
                done.signal()
            }
            while !isStopped {
                guard Socket.poll([listener], timeoutMilliseconds: 50).contains(0),
                    let connection = Socket.accept(listener)
                else { continue }
                connections.append(connection)
                var buffer = [UInt8](repeating: 0, count: 4096)
                var quick = 0
                while quick < quickReplies, buffer.withUnsafeMutableBytes({ Socket.read(connection, into: $0) }) > 0,
                    Socket.writeAll(connection, Array("+PONG\r\n".utf8))
                {
                    quick += 1
                }
                guard quick == quickReplies,
                    buffer.withUnsafeMutableBytes({ Socket.read(connection, into: $0) }) > 0
                else { continue }
                for byte in reply {
                    if isStopped || !Socket.writeAll(connection, [byte]) { break }
                    sent.withLock { $0 += 1 }
                    usleep(pause)
                }
            }
        }
    }

    let port: UInt16
    private let core: Core

    /// - Parameter quickReplies: commands of each connection answered at once (`+PONG`) before
    ///   the one whose reply is dripped.
    init(replyBytes: Int = 400, interval: Duration = .milliseconds(25), quickReplies: Int = 0) throws {
        let (fd, port) = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 16)
        self.port = port
        let core = Core(listener: fd)
        self.core = core
        let reply =
            Array("$\(replyBytes)\r\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: replyBytes)
            + Array("\r\n".utf8)
        let pause = useconds_t(interval.components.attoseconds / 1_000_000_000_000)
        let thread = Thread { core.serve(reply, pause: pause, quickReplies: quickReplies) }
        thread.name = "DrippingServer \(port)"
        thread.start()
    }

    /// The reply bytes written so far, on every connection.
    var bytesSent: Int { core.sent.withLock { $0 } }

    /// Stops accepting and dripping, and waits for the thread.
    func stop() {
        let first = core.stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        core.done.wait()
        close(core.listener)
    }

    deinit { stop() }
}

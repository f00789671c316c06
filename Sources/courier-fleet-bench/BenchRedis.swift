import CourierLocking
import CourierTesting
import Foundation

/// A counter shared by the loopback server's route handlers.
final class Counter: Sendable {
    private let count = LockedValue(0)
    var value: Int { count.withLock { $0 } }
    func next() -> Int {
        count.withLock { value in
            value += 1; return value
        }
    }
}

/// The benchmark's own redis-server: a free loopback port, no persistence, a temporary folder.
final class BenchRedis: Sendable {
    let port: Int
    let directory: String
    private let process = LockedValue<pid_t?>(nil)

    init() throws {
        directory = NSTemporaryDirectory() + "courier-fleet-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        close(fd)
        port = Int(UInt16(bigEndian: address.sin_port))
        let server = try ChildProcess.spawn(
            "/usr/bin/redis-server",
            [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory,
                "--logfile", directory + "/redis.log",
            ])
        process.withLock { $0 = server.pid }
        // Wait until it accepts connections.
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var target = address
            let connected = withUnsafeMutablePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, length) == 0 }
            }
            close(probe)
            if connected { return }
            usleep(10_000)
        }
    }

    func stop() {
        process.withLock { process in
            guard let pid = process else { return }
            kill(pid, SIGTERM)
            _ = ChildProcess.wait(pid)
            process = nil
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

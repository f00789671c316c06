import Foundation
import Glibc

/// Starts and reaps child processes (nginx, openssl, the tests' helper processes) with
/// `posix_spawn` and `waitpid`.
///
/// Used instead of Foundation's `Process`, which leaks a small object per launch (reported by
/// LeakSanitizer), cannot wait with a time limit, and crashed the test binary (SIGILL inside
/// `Process.run()`, 23 Nov 2026) when two suites launched processes at the same time.
public enum ChildProcess {
    /// Where a child's standard output or error goes.
    public enum Output: Sendable {
        /// Sent to `/dev/null`.
        case discard
        /// Sent into a pipe whose read end `spawn` returns.
        case capture
    }

    /// Starts `executable` with `arguments`; standard input, output and error are `/dev/null`
    /// except the one stream `capture`d into the returned descriptor.
    /// - Returns: the pid, and the read end of the captured stream (or -1).
    public static func spawn(
        _ executable: String, _ arguments: [String], stdout: Output = .discard, stderr: Output = .discard
    )
        throws -> (pid: pid_t, output: Int32)
    {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeFDs: [Int32] = [-1, -1]
        if stdout == .capture || stderr == .capture {
            // Both ends close-on-exec from the start (the child gets the write end as a dup2'd
            // standard stream, which is not): a child another thread spawns meanwhile must not
            // inherit the write end, or reading this pipe never ends while that child lives (a
            // daemonized nginx held one, and the suite hung).
            guard Socket.makePipe(&pipeFDs) else { throw SocketError("pipe") }
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        for (fd, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            if output == .capture {
                posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], fd)
            } else {
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            }
        }
        if pipeFDs[1] >= 0 { posix_spawn_file_actions_addclose(&actions, pipeFDs[1]) }

        // The child starts with default signal handling and nothing blocked, whatever this
        // process ignores (SIGPIPE) or blocks; otherwise SIGTERM could not stop it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv + [nil], environ)
        if pipeFDs[1] >= 0 { close(pipeFDs[1]) }
        guard result == 0 else {
            if pipeFDs[0] >= 0 { close(pipeFDs[0]) }
            throw SocketError("posix_spawn(\(executable))", code: result)
        }
        return (pid, pipeFDs[0])
    }

    /// Runs `executable` to completion, or kills it after `timeout`.
    ///
    /// The limit turns a child that never ends (or a captured pipe some other process holds
    /// open) into a failure that names the command, instead of a test that waits forever and
    /// a suite that only the watchdog ends, ten silent minutes later.
    /// - Returns: the exit status (128 + signal when killed) and the captured stream.
    /// - Throws: `SocketError` (`ETIMEDOUT`) when the child ran past `timeout`; it is killed.
    public static func run(
        _ executable: String, _ arguments: [String], capture: Output = .discard, stderr: Bool = false,
        timeout: Duration = .seconds(300)
    )
        throws -> (status: Int32, output: Data)
    {
        let child = try spawn(
            executable, arguments, stdout: stderr ? .discard : capture, stderr: stderr ? capture : .discard)
        let deadline = ContinuousClock.now + timeout
        var output = Data()
        var ended = true
        if child.output >= 0 {
            ended = readToEnd(child.output, into: &output, until: deadline)
            close(child.output)
        }
        while ended {
            if let status = poll(child.pid) { return (status, output) }
            guard ContinuousClock.now < deadline else { break }
            usleep(2_000)
        }
        kill(child.pid, SIGKILL)
        _ = wait(child.pid)
        let command = ([executable] + arguments.prefix(2)).joined(separator: " ")
        throw SocketError("\(command) (killed after \(timeout))", code: ETIMEDOUT)
    }

    /// The full path of `name` found on `PATH` (or in the usual sbin folders), or `nil`.
    public static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders =
            path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/sbin"]
        return folders.map { $0 + "/" + name }.first { access($0, X_OK) == 0 }
    }

    /// Waits for `pid` to exit and reaps it.
    /// - Returns: the exit status, or 128 + the signal that ended it.
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return decode(status)
    }

    /// Reaps `pid` if it has exited.
    /// - Returns: its status, or `nil` while it is still running.
    public static func poll(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid { return decode(status) }
        return result < 0 && errno == ECHILD ? -1 : nil
    }

    /// Sends SIGTERM, waits up to `grace` for the exit (then SIGKILL), and reaps the process.
    /// A stopped process (SIGSTOP) is continued first so that it can exit.
    public static func terminate(_ pid: pid_t, grace: Duration = .seconds(5)) {
        guard poll(pid) == nil else { return }
        kill(pid, SIGCONT)
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline {
            if poll(pid) != nil { return }
            usleep(2_000)  // a server's shutdown takes a few milliseconds
        }
        kill(pid, SIGKILL)
        _ = wait(pid)
    }

    /// Waits until the process `pid` itself listens on `port`, the process exits (e.g. its
    /// port was taken), or `timeout` passes.
    ///
    /// A connection that succeeds is not enough: the port is found free by binding and closing
    /// it, and a listener another test makes meanwhile can take it first. The proxy then failed
    /// to bind, but the probe reached that other server, and a proxy test talked to a test
    /// server (a 404). So the listening socket must be one of `pid`'s descriptors.
    /// - Returns: true once the process listens on the port.
    public static func waitUntilAccepting(port: UInt16, pid: pid_t, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        repeat {
            if listens(pid: pid, port: port) { return true }
            if poll(pid) != nil { return false }
            usleep(10_000)
        } while ContinuousClock.now < deadline
        return false
    }

    /// Whether one of `pid`'s descriptors is a TCP socket listening on `port` (IPv4 or IPv6),
    /// read from `/proc/net/tcp{,6}` and `/proc/PID/fd`.
    static func listens(pid: pid_t, port: UInt16) -> Bool {
        let suffix = String(format: ":%04X", UInt32(port))
        var inodes: Set<Substring> = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // Read to the end: Foundation reads a file the size `stat` gives, 0 for these, and
            // got only the first page of `/proc/net/tcp` (27 of its lines in a full test run).
            let fd = open(table, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var table = Data()
            readToEnd(fd, into: &table)
            let text = String(decoding: table, as: UTF8.self)
            close(fd)
            for line in text.split(separator: "\n").dropFirst() {
                // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[3] == "0A", fields[1].hasSuffix(suffix) else { continue }
                inodes.insert(fields[9])
            }
        }
        guard !inodes.isEmpty,
            let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        else { return false }
        return descriptors.contains { descriptor in
            guard
                let target = try? FileManager.default.destinationOfSymbolicLink(
                    atPath: "/proc/\(pid)/fd/\(descriptor)"),
                target.hasPrefix("socket:["), target.hasSuffix("]")
            else { return false }
            return inodes.contains(target.dropFirst(8).dropLast())
        }
    }

    private static func decode(_ status: Int32) -> Int32 {
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// Reads `fd` into `bytes` until end of file (or an error other than an interruption).
/// - Parameter deadline: when to give up waiting for more; nil waits as long as it takes.
/// - Returns: false when `deadline` came first.
@discardableResult
private func readToEnd(_ fd: Int32, into bytes: inout Data, until deadline: ContinuousClock.Instant? = nil) -> Bool {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        if let deadline {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return false }
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + 1)
            if Socket.poll([fd], timeoutMilliseconds: milliseconds).isEmpty { continue }
        }
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return true }
        bytes.append(contentsOf: buffer[0..<count])
    }
}

/// Runs blocking work (a child process, a socket read, a semaphore wait) on a thread of its own
/// and awaits it.
///
/// Swift Testing runs tests on the cooperative pool, one thread per core (two on a two-core
/// machine); a test that blocks there stalls every async test of the run and breaks their time
/// bounds. Tests await their blocking calls through this instead.
/// - Parameter body: the blocking work.
/// - Returns: what `body` returns.
/// - Throws: what `body` throws.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How the requests are issued.
enum Driver: String {
    /// `concurrency` long-lived workers, each sending its share of the requests one after the
    /// other (a client library's own loop, `wrk`'s model).
    case worker
    /// A new task for every request, at most `concurrency` at a time: the way a server's
    /// request handlers call a client.
    case task

    /// - Returns: how many calls failed (with `countsFailures`; else the first failure is thrown).
    func run(
        total: Int, concurrency: Int, countsFailures: Bool, _ body: @escaping @Sendable () async throws -> Void
    ) async throws -> Int {
        switch self {
        case .worker:
            try await courier_http_bench.run(
                total: total, concurrency: concurrency, countsFailures: countsFailures, body)
        case .task:
            try await runTaskPerRequest(total: total, concurrency: concurrency, countsFailures: countsFailures, body)
        }
    }
}

/// Runs `total` calls of `body`, each in a task of its own, `concurrency` at a time.
/// - Returns: how many calls failed (with `countsFailures`; else the first failure is thrown).
func runTaskPerRequest(
    total: Int, concurrency: Int, countsFailures: Bool, _ body: @escaping @Sendable () async throws -> Void
) async throws -> Int {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        let call: @Sendable () async throws -> Bool = {
            do {
                try await body()
                return true
            } catch {
                guard countsFailures else { throw error }
                return false
            }
        }
        var started = 0
        var failures = 0
        while started < min(max(1, concurrency), total) {
            group.addTask(operation: call)
            started += 1
        }
        while let succeeded = try await group.next() {
            if !succeeded { failures += 1 }
            guard started < total else { continue }
            group.addTask(operation: call)
            started += 1
        }
        return failures
    }
}

/// The most file descriptors the process held open while it ran, sampled from /proc/self/fd
/// every few milliseconds on a thread of its own (`--sample-fds`: the scaling table's check
/// that descriptors stay bounded).
final class DescriptorSampler: @unchecked Sendable {
    // @unchecked: `highest` is written by the sampling thread only, and read by `stop()` after
    // that thread signalled `finished` (the semaphore orders the two).
    private var highest = 0
    private let finished = DispatchSemaphore(value: 0)
    private let stopRequest = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            while stopRequest.wait(timeout: .now() + .milliseconds(5)) == .timedOut {
                highest = max(highest, Self.openDescriptors())
            }
            highest = max(highest, Self.openDescriptors())
            finished.signal()
        }
        thread.start()
    }

    /// Stops sampling.
    /// - Returns: the most descriptors seen open.
    func stop() -> Int {
        stopRequest.signal()
        finished.wait()
        return highest
    }

    static func openDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while readdir(directory) != nil { count += 1 }
        return count - 3  // ".", ".." and the directory's own descriptor
    }
}

// One HTTP client per process, so that its CPU time and peak RSS are its own.
//
//   courier-http-bench CLIENT --url URL [--requests N] [--concurrency C] [--connections K] [--warmup W]
//                             [--body-bytes B] [--driver worker|task] [--sample-fds yes] [--ca PEM]
//                             [--failures stop|count]
//   courier-http-bench write-body PATH
//
// CLIENT is one of `Client.allCases`. Prints one JSON line with the figures of the measured
// requests (warm-up excluded): requests per second, client CPU µs per request (getrusage user +
// sys of the whole process over the measured phase) and the process's peak RSS. `--driver task`
// starts a task per request instead of long-lived workers (see `Driver`); `--sample-fds yes`
// adds the most file descriptors held open during the measured phase (`max_fds`). `--ca` trusts
// a test CA for https URLs (Courier clients only); `--failures count` goes on after a failed
// request and reports how many failed (`failures`; the default stops at the first).
import BenchSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct Options {
    var client: Client
    var url: URL
    var requests = 10_000
    var concurrency = 32
    var connections: Int?
    var warmup = 500
    /// The body size of every response (the catalog's unless the URL serves another file).
    var bodyBytes = Catalog.body.count
    var driver = Driver.worker
    var samplesDescriptors = false
    var caBundlePath: String?
    /// Count failed requests and go on, rather than stop at the first.
    var countsFailures = false
}

func parseOptions() -> Options {
    var arguments = Array(CommandLine.arguments.dropFirst())
    guard let name = arguments.first else { usage() }
    if name == "write-body" {
        guard arguments.count == 2 else { usage() }
        do {
            try Catalog.body.write(to: URL(fileURLWithPath: arguments[1]))
            print("wrote \(Catalog.body.count) bytes to \(arguments[1])")
            exit(0)
        } catch {
            fail("cannot write \(arguments[1]): \(error)")
        }
    }
    guard let client = Client(rawValue: name) else { usage() }
    arguments.removeFirst()
    var url: URL?
    var options = Options(client: client, url: URL(string: "http://127.0.0.1/")!)
    while !arguments.isEmpty {
        let flag = arguments.removeFirst()
        guard let value = arguments.first else { usage() }
        arguments.removeFirst()
        switch flag {
        case "--url": url = URL(string: value)
        case "--requests": options.requests = Int(value) ?? options.requests
        case "--concurrency": options.concurrency = Int(value) ?? options.concurrency
        case "--connections": options.connections = Int(value)
        case "--warmup": options.warmup = Int(value) ?? options.warmup
        case "--body-bytes": options.bodyBytes = Int(value) ?? options.bodyBytes
        case "--driver":
            guard let driver = Driver(rawValue: value) else { usage() }
            options.driver = driver
        case "--sample-fds": options.samplesDescriptors = value == "yes"
        case "--ca": options.caBundlePath = value
        case "--failures":
            guard value == "stop" || value == "count" else { usage() }
            options.countsFailures = value == "count"
        default: usage()
        }
    }
    guard let url else { usage() }
    options.url = url
    return options
}

func usage() -> Never {
    let clients = Client.allCases.map(\.rawValue).joined(separator: "|")
    fail(
        "usage: courier-http-bench \(clients) --url URL [--requests N] [--concurrency C] [--connections K] [--warmup W]"
            + " [--body-bytes B] [--driver worker|task] [--sample-fds yes] [--ca PEM] [--failures stop|count]\n"
            + "       courier-http-bench write-body PATH")
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// `getrusage` of this process (RUSAGE_SELF is 0; glibc types the parameter differently
/// depending on feature macros, so it is passed as a literal).
func selfUsage() -> rusage {
    var usage = rusage()
    getrusage(.init(0), &usage)
    return usage
}

/// CPU seconds (user + system) of this process so far.
func cpuSeconds() -> Double {
    let usage = selfUsage()
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    return user + system
}

/// Peak resident set size of this process, in KiB.
func peakRSSKiB() -> Int {
    selfUsage().ru_maxrss
}

/// Runs `total` calls of `body`, `concurrency` at a time; each worker takes the next index.
/// - Parameter countsFailures: go on after a failed call (else the first failure is thrown).
/// - Returns: how many calls failed.
@discardableResult
func run(
    total: Int, concurrency: Int, countsFailures: Bool = false, _ body: @escaping @Sendable () async throws -> Void
) async throws -> Int {
    try await withThrowingTaskGroup(of: Int.self) { group in
        let workers = max(1, min(concurrency, total))
        for worker in 0..<workers {
            let share = total / workers + (worker < total % workers ? 1 : 0)
            group.addTask {
                var failures = 0
                for _ in 0..<share {
                    do {
                        try await body()
                    } catch {
                        guard countsFailures else { throw error }
                        if failures == 0 { FileHandle.standardError.write(Data("first failure: \(error)\n".utf8)) }
                        failures += 1
                    }
                }
                return failures
            }
        }
        return try await group.reduce(0, +)
    }
}

/// Measures `options.client` and prints its figures.
func measure(_ options: Options) async {
    let runner: Runner
    do {
        runner = try await options.client.makeRunner(
            url: options.url, connections: options.connections ?? options.concurrency, bodyBytes: options.bodyBytes,
            caBundlePath: options.caBundlePath)
    } catch {
        fail("\(options.client.rawValue): \(error)")
    }
    do {
        // Warm-up: open the connections and fault in the code paths.
        var warmupFailures = 0
        if options.warmup > 0 {
            warmupFailures = try await run(
                total: max(options.warmup, options.concurrency), concurrency: options.concurrency,
                countsFailures: options.countsFailures, runner.request)
        }
        let sampler = options.samplesDescriptors ? DescriptorSampler() : nil
        let cpuBefore = cpuSeconds()
        let start = ContinuousClock.now
        let failures = try await options.driver.run(
            total: options.requests, concurrency: options.concurrency, countsFailures: options.countsFailures,
            runner.request)
        let elapsed = ContinuousClock.now - start
        let cpu = cpuSeconds() - cpuBefore
        let descriptors = sampler?.stop()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var result: [String: Any] = [
            "client": options.client.rawValue, "requests": options.requests, "concurrency": options.concurrency,
            "connections": options.connections ?? options.concurrency, "seconds": seconds,
            "rps": Double(options.requests) / seconds, "cpu_us_per_request": cpu * 1e6 / Double(options.requests),
            "peak_rss_kib": peakRSSKiB(), "driver": options.driver.rawValue,
        ]
        if let descriptors { result["max_fds"] = descriptors }
        if options.countsFailures {
            result["failures"] = failures
            result["warmup_failures"] = warmupFailures
        }
        let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
        try await runner.shutdown()
    } catch {
        try? await runner.shutdown()
        fail("\(options.client.rawValue): \(error)")
    }
}

// A synchronous main that waits on a semaphore rather than top-level `await`: with an async
// main, the main thread waits in libdispatch's `sigsuspend`, and valgrind 3.19 (callgrind, used
// to count instructions per request) crashes as soon as the process starts another thread.
// Detached: top-level code is on the main actor, whose thread the semaphore blocks.
let options = parseOptions()
let done = DispatchSemaphore(value: 0)
Task.detached {
    await measure(options)
    done.signal()
}
done.wait()

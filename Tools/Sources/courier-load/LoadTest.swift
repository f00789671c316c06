import Courier
import Foundation
import HTTPTypes

/// A bounded load run: N requests with K in flight through one `HTTPClient`, then checks that
/// nothing failed, that file descriptors return to the baseline once the client is gone, and
/// that resident memory after N is within 10% of after N/2 (no growth per request).
///
/// Usage: courier-load URL [--requests N] [--in-flight K] [--connections C]
@main
struct LoadTest {
    struct Options {
        var url: URL
        var requests = 100_000
        var inFlight = 256
        var connections = 64
        var expectedBytes: Int?
    }

    static func main() async {
        guard let options = parse(CommandLine.arguments.dropFirst()) else {
            print("usage: courier-load URL [--requests N] [--in-flight K] [--connections C] [--bytes B]")
            exit(2)
        }
        do {
            exit(try await run(options) ? 0 : 1)
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }

    static func parse(_ arguments: ArraySlice<String>) -> Options? {
        var rest = Array(arguments)
        guard !rest.isEmpty, let url = URL(string: rest.removeFirst()) else { return nil }
        var options = Options(url: url)
        while rest.count >= 2 {
            let name = rest.removeFirst()
            guard let value = Int(rest.removeFirst()) else { return nil }
            switch name {
            case "--requests": options.requests = value
            case "--in-flight": options.inFlight = value
            case "--connections": options.connections = value
            case "--bytes": options.expectedBytes = value
            default: return nil
            }
        }
        return rest.isEmpty ? options : nil
    }

    /// What one round of requests through one client came to.
    struct Round {
        var failures: [String: Int] = [:]
        var latencies: [Duration] = []
        var halfwayRSS = 0
        var finalRSS = 0
    }

    /// Sends `requests` GETs, `options.inFlight` at a time, through a new client that is
    /// released before this returns.
    static func round(_ options: Options, requests: Int) async throws -> Round {
        var result = Round()
        result.latencies.reserveCapacity(requests)
        var configuration = HTTPClient.Configuration(timeout: .seconds(60), connectTimeout: .seconds(10))
        configuration.maxConnectionsPerHost = options.connections
        configuration.maxConnections = options.connections
        configuration.notificationCenter = NotificationCenter()
        let client = try HTTPClient(configuration: configuration)
        var head = HTTPRequest(method: .get, scheme: options.url.scheme, authority: nil, path: nil)
        head.authority = options.url.host.map { host in options.url.port.map { "\(host):\($0)" } ?? host }
        head.path = options.url.path.isEmpty ? "/" : options.url.path
        let request = head
        let expected = options.expectedBytes

        try await withThrowingTaskGroup(of: (String?, Duration).self) { group in
            var issued = 0
            var completed = 0
            func add() {
                issued += 1
                group.addTask {
                    let begin = ContinuousClock.now
                    do {
                        let response = try await client.send(request)
                        if response.status != .ok { return ("status \(response.status.code)", .zero) }
                        if let expected, response.body.count != expected { return ("short body", .zero) }
                        return (nil, ContinuousClock.now - begin)
                    } catch let error as CourierError {
                        return ("\(error.code)", .zero)
                    } catch {
                        return ("\(type(of: error))", .zero)
                    }
                }
            }
            while issued < min(options.inFlight, requests) { add() }
            while let (failure, latency) = try await group.next() {
                completed += 1
                if let failure {
                    result.failures[failure, default: 0] += 1
                } else {
                    result.latencies.append(latency)
                }
                if completed == requests / 2 { result.halfwayRSS = residentBytes() }
                if completed == requests { result.finalRSS = residentBytes() }
                if issued < requests { add() }
            }
        }
        return result
    }

    static func run(_ options: Options) async throws -> Bool {
        // A warm-up round through a client of its own, released before the baseline: what
        // the process opens once and keeps (Dispatch's epoll fd and one timerfd per clock it
        // armed, made lazily) is then in the baseline, and what remains above it after the
        // measured run is what a client left behind.
        func sockets() -> Int { fileDescriptorTargets().filter { $0.contains("socket:") }.count }
        let socketsBefore = sockets()
        let warmUp = try await round(options, requests: min(options.requests, options.inFlight * 4))
        // The released client's curl thread closes its connections on the way out.
        let settleDeadline = ContinuousClock.now + .seconds(10)
        while sockets() > socketsBefore && ContinuousClock.now < settleDeadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let baselineTargets = fileDescriptorTargets()
        let baselineFDs = openFileDescriptors()
        let baselineRSS = residentBytes()
        let start = ContinuousClock.now
        let measured = try await round(options, requests: options.requests)
        var failures = measured.failures
        for (failure, count) in warmUp.failures { failures["warm-up: \(failure)", default: 0] += count }
        var latencies = measured.latencies
        let halfwayRSS = measured.halfwayRSS
        let finalRSS = measured.finalRSS
        let elapsed = ContinuousClock.now - start
        // The client is gone; its curl thread closes every connection on the way out.
        var fdsAfter = openFileDescriptors()
        let fdDeadline = ContinuousClock.now + .seconds(10)
        while fdsAfter > baselineFDs && ContinuousClock.now < fdDeadline {
            try await Task.sleep(for: .milliseconds(50))
            fdsAfter = openFileDescriptors()
        }

        latencies.sort()
        func percentile(_ p: Double) -> String {
            guard !latencies.isEmpty else { return "-" }
            let value = latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
            return String(
                format: "%.2f ms", Double(value.components.attoseconds) / 1e15 + Double(value.components.seconds) * 1000
            )
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let failed = failures.values.reduce(0, +)
        let growth = halfwayRSS > 0 ? Double(finalRSS - halfwayRSS) / Double(halfwayRSS) : 0
        let fdOK = fdsAfter <= baselineFDs
        let rssOK = abs(growth) <= 0.10
        func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        print(
            "requests:        \(options.requests) (\(options.inFlight) in flight, \(options.connections) connections)")
        print(String(format: "elapsed:         %.1f s (%.0f requests/s)", seconds, Double(options.requests) / seconds))
        print("latency:         p50 \(percentile(0.5)), p99 \(percentile(0.99)), max \(percentile(1))")
        print("failures:        \(failed) \(failures.isEmpty ? "" : "\(failures)")")
        print("fds:             baseline \(baselineFDs), after \(fdsAfter) \(fdOK ? "ok" : "LEAKED")")
        print(
            "rss:             start \(mib(baselineRSS)), after \(options.requests / 2) \(mib(halfwayRSS)), after \(options.requests) \(mib(finalRSS)) (\(String(format: "%+.1f%%", growth * 100))) \(rssOK ? "ok" : "GREW")"
        )
        if !fdOK {
            let extra = fileDescriptorTargets().filter { !baselineTargets.contains($0) }
            print("extra fds:       \(extra)")
        }
        return failed == 0 && fdOK && rssOK
    }

    /// "fd -> target" for every open descriptor, to name the ones left open.
    static func fileDescriptorTargets() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(
            names.compactMap { name in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")).map {
                    "\(name) -> \($0)"
                }
            })
    }

    /// Entries in /proc/self/fd, minus the one the listing itself opens.
    static func openFileDescriptors() -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 1) - 1
    }

    /// VmRSS from /proc/self/status, in bytes.
    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kib = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            return kib * 1024
        }
        return 0
    }
}

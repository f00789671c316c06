// The fleet-mode benchmark: N processes (default 1, 4, 16) share one Redis and call the same
// cacheable endpoints of one loopback server. It counts origin requests per unique resource
// and token refreshes per expiry (the goal is 1 each, fleet-wide) and measures what a
// shared-cache hit adds over a memory hit. Starts its own redis-server on a free loopback
// port and stops it. Not run by the tests:
//
//     swift build -c release --product courier-fleet-bench
//     .build/release/courier-fleet-bench [--processes 1,4,16] [--resources 20] [--expiries 3]
import Courier
import CourierRedis
import CourierTesting
import Foundation
import HTTPTypes

let identityKey: [UInt8] = Array("courier-fleet-benchmark-identity-key-32b".utf8)

func argument(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]
}

func microseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

/// One child process: expiries and resource rounds, then the latency probes. Prints one line.
func runChild() async throws {
    let redisPort = Int(argument("--redis-port")!)!
    let serverPort = Int(argument("--server-port")!)!
    let resources = Int(argument("--resources")!)!
    let expiries = Int(argument("--expiries")!)!
    let base = URL(string: "http://127.0.0.1:\(serverPort)")!
    let fleet = try RedisFleet(configuration: .init(port: redisPort, identityKey: identityKey))
    let rules = [CacheRule("127.0.0.1", .followHTTP)]
    let client = try HTTPClient(
        configuration: .init(baseURL: base, cache: try fleet.cache(.init(rules: rules, storage: .memoryOnly))))
    let tokenClient = try HTTPClient(configuration: .init(baseURL: base))
    let tokens = fleet.coordinator(name: "bench", credential: "t0") { _ in
        let response = try await tokenClient.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/token"))
        return String(decoding: response.body, as: UTF8.self)
    }
    for expiry in 1...max(1, expiries) {
        // Every process sees the token of this expiry rejected (the server numbers them
        // t1, t2, …) and asks for a new one; a process already holding a newer one keeps it.
        _ = try await tokens.credential(replacing: "t\(expiry - 1)")
        for index in 0..<resources {
            _ = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/res/\(index)"))
        }
    }
    // Latency: a fresh client (empty memory tier) reading entries held in Redis, then the same
    // entries again from its memory tier.
    let probe = try HTTPClient(
        configuration: .init(baseURL: base, cache: try fleet.cache(.init(rules: rules, storage: .memoryOnly))))
    var shared: [Double] = []
    var memory: [Double] = []
    let clock = ContinuousClock()
    for index in 0..<resources {
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/res/\(index)")
        var fromCache = false
        shared.append(microseconds(try await clock.measure { fromCache = try await probe.send(request).isFromCache }))
        if !fromCache { shared.removeLast() }
        memory.append(microseconds(try await clock.measure { _ = try await probe.send(request) }))
    }
    print("RESULT \(percentile(shared, 0.5)) \(percentile(memory, 0.5)) \(percentile(shared, 0.99)) \(shared.count)")
}

func runParent() async throws {
    let counts = (argument("--processes") ?? "1,4,16").split(separator: ",").compactMap { Int($0) }
    let resources = Int(argument("--resources") ?? "20") ?? 20
    let expiries = Int(argument("--expiries") ?? "3") ?? 3
    let executable =
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments[0]
    print(
        "| processes | origin requests / resource | token refreshes / expiry | shared hit p50 µs | memory hit p50 µs | added p50 µs | shared hit p99 µs | wall s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for count in counts {
        let redis = try BenchRedis()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let tokenCount = Counter()
        server.route("/token") { _ in
            let n = tokenCount.next()
            return ScriptedResponse(status: 200, headers: [.contentType: "text/plain"], body: Data("t\(n)".utf8))
        }
        for index in 0..<resources {
            server.route("/res/\(index)") { _ in
                var response = ScriptedResponse.json(["resource": index])
                response.headers[.cacheControl] = "max-age=300"
                response.delay = .milliseconds(5)
                return response
            }
        }
        let started = ContinuousClock.now
        var children: [(pid: pid_t, output: Int32)] = []
        for _ in 0..<count {
            children.append(
                try ChildProcess.spawn(
                    executable,
                    [
                        "--child", "--redis-port", String(redis.port), "--server-port", String(server.port),
                        "--resources", String(resources), "--expiries", String(expiries),
                    ], stdout: .capture))
        }
        var sharedP50: [Double] = []
        var memoryP50: [Double] = []
        var sharedP99: [Double] = []
        for child in children {
            var output = Data()
            var buffer = [UInt8](repeating: 0, count: 4_096)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(child.output, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                output.append(contentsOf: buffer[0..<count])
            }
            close(child.output)
            _ = ChildProcess.wait(child.pid)
            let text = String(decoding: output, as: UTF8.self)
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("RESULT ") }) else {
                print("child failed: \(text)")
                continue
            }
            let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
            if fields.count == 4, fields[3] > 0 {
                sharedP50.append(fields[0])
                memoryP50.append(fields[1])
                sharedP99.append(fields[2])
            }
        }
        let wall = ContinuousClock.now - started
        let origin = Double(server.requestCount - tokenCount.value) / Double(resources)
        let refreshes = Double(tokenCount.value) / Double(expiries)
        let shared = percentile(sharedP50, 0.5)
        let memory = percentile(memoryP50, 0.5)
        print(
            "| \(count) | \(String(format: "%.2f", origin)) | \(String(format: "%.2f", refreshes)) | "
                + "\(String(format: "%.0f", shared)) | \(String(format: "%.0f", memory)) | "
                + "\(String(format: "%.0f", shared - memory)) | \(String(format: "%.0f", percentile(sharedP99, 0.5))) | "
                + "\(String(format: "%.2f", microseconds(wall) / 1e6)) |")
    }
}

if CommandLine.arguments.contains("--child") {
    try await runChild()
} else {
    try await runParent()
}

import BenchSupport
import Benchmark
import Courier
import Foundation
import HTTPTypes

// MARK: - Cache: a hit from memory and from disk against a loopback round trip to nginx

func cacheBenchmarks() {
    // scripts/benchmark.sh passes the nginx URL; without it the cache benchmarks are skipped.
    guard let target = ProcessInfo.processInfo.environment["BENCH_URL"].flatMap(URL.init(string:)) else { return }
    let request = HTTPRequest(
        method: .get, scheme: target.scheme ?? "http",
        authority: "\(target.host ?? "127.0.0.1")\(target.port.map { ":\($0)" } ?? "")", path: target.path)
    let year = CacheRule.Policy.forceLifetime(.seconds(365 * 86_400))
    // The script points this into its temporary folder, which it removes.
    let directory = URL(
        fileURLWithPath: ProcessInfo.processInfo.environment["BENCH_CACHE_DIR"]
            ?? NSTemporaryDirectory() + "courier-bench-cache-\(getpid())")
    do {
        let plain = try HTTPClient()
        let memory = try HTTPClient(
            configuration: .init(
                cache: try HostScopedCache(
                    configuration: .init(rules: [CacheRule("127.0.0.1", year)], storage: .memoryOnly))))
        // No memory tier to speak of: every hit reads SQLite.
        let disk = try HTTPClient(
            configuration: .init(
                cache: try HostScopedCache(
                    configuration: .init(
                        rules: [CacheRule("127.0.0.1", year)], storage: .disk(directory: directory.path),
                        memoryCapacityBytes: 0, memoryCapacityEntries: 0))))
        Benchmark("Cache: loopback round trip (no cache, nginx)") { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try await plain.send(request))
            }
        }
        // Each sample first makes sure the entry is stored (the very first send is a miss that
        // fills the cache), outside the measurement; every measured send must be a hit.
        Benchmark("Cache: memory hit") { benchmark in
            blackHole(try await memory.send(request))
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let response = try await memory.send(request)
                precondition(response.isFromCache)
                blackHole(response)
            }
        }
        Benchmark("Cache: disk hit (SQLite)") { benchmark in
            blackHole(try await disk.send(request))
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let response = try await disk.send(request)
                precondition(response.isFromCache)
                blackHole(response)
            }
        }
    } catch {
        fatalError("cache benchmarks: \(error)")
    }
}

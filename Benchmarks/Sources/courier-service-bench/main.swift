// Courier's own HTTP paths only, one per process: the subset of `courier-http-bench` that
// scripts/service-overhead.sh measures (issue 17: what `APIService` costs over `send`).
//
//   courier-service-bench CLIENT --url URL [--requests N] [--concurrency C] [--warmup W]
//   courier-service-bench write-body PATH
//
// CLIENT is `courier-transport`, `courier-e2e` or `courier-service`, with the same code as
// courier-http-bench's `CourierRunner` (keep them in step), or `courier-service-default`: the
// same service call with the default options, de-duplication on (identical GETs in flight share
// one transfer: compare it with the others at 1 in flight only). The same output: one JSON line
// with requests per second and CPU µs per request (getrusage of the process over the measured
// requests, warm-up excluded). A target of its own, depending on Courier only, so that it
// builds in release without AsyncHTTPClient and swift-protobuf (minutes on a shared machine);
// `Catalog.swift` is a link to BenchSupport's, the model every JSON benchmark decodes.
import Courier
import Foundation
import HTTPTypes

#if canImport(Glibc)
    import Glibc
#endif

struct UnexpectedResponse: Error, CustomStringConvertible {
    var description: String
}

/// A domain service with one endpoint, as an app would write it (as in courier-http-bench).
///
/// The calls opt out of the de-duplication of identical GETs in flight (on by default): with
/// it, concurrent calls of the same URL would share transfers, and the run would make fewer
/// HTTP requests than the paths it is compared with.
struct CatalogService: APIService {
    let core: ServiceCore
    private static let everyCallSent = CallOptions(deduplicates: false)

    func catalog(path: String) async throws(CourierError) -> Catalog {
        try await get(path, options: Self.everyCallSent)
    }

    /// The call with the default options: what an app's `get` does.
    func catalogWithDefaults(path: String) async throws(CourierError) -> Catalog {
        try await get(path)
    }
}

/// One request of the chosen client.
func makeRequest(client: String, url: URL, connections: Int) throws -> @Sendable () async throws -> Void {
    switch client {
    case "courier-transport", "courier-e2e", "courier-bytes":
        let configuration = HTTPClient.Configuration(
            maxConnectionsPerHost: connections, maxConnections: max(connections, 64))
        let http = try HTTPClient(configuration: configuration)
        let authority = "\(url.host ?? "127.0.0.1")\(url.port.map { ":\($0)" } ?? "")"
        let request = HTTPRequest(method: .get, scheme: url.scheme ?? "http", authority: authority, path: url.path)
        if client == "courier-bytes" {
            // Any body (a gzip answer of nginx's, say): its decoded size when COURIER_BENCH_BYTES says.
            let expected = ProcessInfo.processInfo.environment["COURIER_BENCH_BYTES"].flatMap(Int.init)
            return {
                let response = try await http.send(request)
                guard response.head.status == .ok, expected.map({ response.body.count == $0 }) ?? true else {
                    throw UnexpectedResponse(description: "\(response.head.status), \(response.body.count) bytes")
                }
            }
        }
        if client == "courier-transport" {
            let expected = Catalog.body.count
            return {
                let response = try await http.send(request)
                guard response.head.status == .ok, response.body.count == expected else {
                    throw UnexpectedResponse(description: "\(response.head.status), \(response.body.count) bytes")
                }
            }
        }
        let serializer: DecodableResponseSerializer<Catalog> = .decodable(Catalog.self)
        let pipeline = ResponsePipeline.default
        // The request `APIService.get` makes for this model: its format's `Accept` header
        // (libcurl's own `Accept: */*` otherwise), so that the two paths do the same work.
        let jsonRequest = HTTPRequest(
            method: .get, scheme: request.scheme, authority: request.authority, path: request.path,
            headerFields: [.accept: serializer.acceptHeader ?? "*/*"])
        return {
            let response = try await http.send(jsonRequest)
            let context = ResponseContext(request: response.request, response: response.head, body: response.body)
            let catalog = try pipeline.process(context, with: serializer)
            guard catalog.count == 10 else { throw UnexpectedResponse(description: "decoded \(catalog.count) items") }
        }
    case "courier-service", "courier-service-default":
        let configuration = HTTPClient.Configuration(
            baseURL: url.deletingLastPathComponent(), maxConnectionsPerHost: connections,
            maxConnections: max(connections, 64))
        let service = CatalogService(core: ServiceCore(client: try HTTPClient(configuration: configuration)))
        let path = url.lastPathComponent
        let defaults = client == "courier-service-default"
        return {
            let catalog = try await defaults ? service.catalogWithDefaults(path: path) : service.catalog(path: path)
            guard catalog.count == 10 else { throw UnexpectedResponse(description: "decoded \(catalog.count) items") }
        }
    default:
        fail("unknown client \(client)")
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// CPU seconds (user + system) of this process so far (RUSAGE_SELF is 0).
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(.init(0), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Runs `total` calls of `body`, `concurrency` at a time (as courier-http-bench does).
func run(total: Int, concurrency: Int, _ body: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        let workers = max(1, min(concurrency, total))
        for worker in 0..<workers {
            let share = total / workers + (worker < total % workers ? 1 : 0)
            group.addTask {
                for _ in 0..<share { try await body() }
            }
        }
        try await group.waitForAll()
    }
}

struct Options: Sendable {
    var client = ""
    var url: URL?
    var requests = 10_000
    var concurrency = 32
    var warmup = 500
}

func parseOptions() -> Options {
    var arguments = Array(CommandLine.arguments.dropFirst())
    let usage =
        "usage: courier-service-bench courier-transport|courier-bytes|courier-e2e|courier-service|courier-service-default --url URL"
        + " [--requests N] [--concurrency C] [--warmup W]\n       courier-service-bench write-body PATH"
    guard !arguments.isEmpty else { fail(usage) }
    if arguments.count == 2, arguments[0] == "write-body" {
        do {
            try Catalog.body.write(to: URL(fileURLWithPath: arguments[1]))
            exit(0)
        } catch {
            fail("cannot write \(arguments[1]): \(error)")
        }
    }
    var options = Options(client: arguments.removeFirst())
    while arguments.count >= 2 {
        let flag = arguments.removeFirst()
        let value = arguments.removeFirst()
        switch flag {
        case "--url": options.url = URL(string: value)
        case "--requests": options.requests = Int(value) ?? options.requests
        case "--concurrency": options.concurrency = Int(value) ?? options.concurrency
        case "--warmup": options.warmup = Int(value) ?? options.warmup
        case "--connections": break  // as many connections as requests in flight
        default: fail(usage)
        }
    }
    guard arguments.isEmpty, options.url != nil else { fail(usage) }
    return options
}

func measure(_ options: Options) async {
    do {
        let request = try makeRequest(client: options.client, url: options.url!, connections: options.concurrency)
        if options.warmup > 0 {
            try await run(total: max(options.warmup, options.concurrency), concurrency: options.concurrency, request)
        }
        let cpuBefore = cpuSeconds()
        let start = ContinuousClock.now
        try await run(total: options.requests, concurrency: options.concurrency, request)
        let elapsed = ContinuousClock.now - start
        let cpu = cpuSeconds() - cpuBefore
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let result: [String: Any] = [
            "client": options.client, "requests": options.requests, "concurrency": options.concurrency,
            "seconds": seconds, "rps": Double(options.requests) / seconds,
            "cpu_us_per_request": cpu * 1e6 / Double(options.requests),
        ]
        let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
    } catch {
        fail("\(options.client): \(error)")
    }
}

// A synchronous main that waits on a semaphore (see courier-http-bench's main.swift: valgrind
// 3.19 crashes under an async main as soon as the process starts another thread).
let options = parseOptions()
let done = DispatchSemaphore(value: 0)
Task.detached {
    await measure(options)
    done.signal()
}
done.wait()

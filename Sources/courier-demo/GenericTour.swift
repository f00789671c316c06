import Courier
import Foundation

/// The generic steps, run against `--base-url`.
struct GenericTour {
    let baseURL: String
    let cacheDirectory: String

    func run(_ runner: TourRunner) async throws -> [String] {
        guard let url = URL(string: baseURL), let host = url.host else {
            throw TourFailure("'\(baseURL)' has no host")
        }
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(host, .forceLifetime(.seconds(365 * 86_400)))],
                storage: .disk(directory: cacheDirectory)))
        let client = try HTTPClient(
            configuration: .init(baseURL: url, notificationCenter: NotificationCenter(), cache: cache))
        let echo = EchoService(core: ServiceCore(client: client, configuration: ServiceConfiguration(servers: nil)))

        await runner.step("JSON GET → model") {
            let answer = try await echo.get(step: "json")
            try expect(answer.args?["step"] == "json", "the echo did not carry ?step=json")
            return "/get echoed step=json (\(answer.headers?.count ?? 0) request headers)"
        }
        await runner.step("form POST") {
            let answer = try await echo.postForm(Settings(theme: "dark", notifications: true, language: "en"))
            let received = answer.form?["theme"] == "dark" || (answer.body ?? "").contains("theme=dark")
            try expect(received, "the server did not receive theme=dark")
            return "/anything received theme=dark&notifications=true&language=en"
        }
        await runner.step("cached for a year (host rule)") {
            let first = try await echo.bytes(2048)
            let second = try await echo.bytes(2048)
            try expect(!first.isFromCache && second.isFromCache, "second fetch isFromCache == \(second.isFromCache)")
            try expect(first.value == second.value, "the cached body differs")
            return "1st: network, \(TourRunner.bytes(first.value.count)); 2nd: from the cache"
        }
        await runner.step("throttled double tap") {
            _ = try await echo.get(step: "tap")
            var second = "sent"
            do { _ = try await echo.get(step: "tap") } catch EchoService.Failure.tooFast { second = "dropped" }
            try expect(second == "dropped", "the second tap was sent")
            return "2nd tap within 1 s dropped before sending (.throttled)"
        }
        await runner.step("batch of 6 with progress") {
            let marks = LockedValue<[String]>([])
            let operations: [@Sendable () async throws -> Echo] = (1...6).map { id in { try await echo.item(id) } }
            let results = await Batch.run(operations, maximumConcurrent: 3) { progress in
                marks.withLock { $0.append("\(progress.completed)/\(progress.total)") }
            }
            let succeeded = results.filter { (try? $0.get()) != nil }.count
            try expect(succeeded == 6, "\(succeeded) of 6 succeeded")
            return "progress \(marks.withLock { $0 }.joined(separator: " "))"
        }
        await runner.step("multipart upload") {
            let seen = LockedValue<Int>(0)
            let data = Data(repeating: 0x5A, count: 256 * 1024)
            _ = try await echo.upload(data) { progress in
                if let fraction = progress.fraction { seen.withLock { $0 = max($0, Int(fraction * 100)) } }
            }
            let reached = seen.withLock { $0 }
            try expect(reached == 100, "upload progress stopped at \(reached)%")
            return "\(TourRunner.bytes(data.count)) sent as multipart, progress reached 100%"
        }
        return runner.failures
    }
}

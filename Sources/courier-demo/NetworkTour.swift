import Courier
import Foundation

/// The tour's steps for the network status and cache-then-network (issue 18, items 3 and 4).
struct NetworkTour {
    let fixture: FixtureAPI

    func run(_ runner: TourRunner) async {
        let fixture = self.fixture

        await runner.step("network status (netlink)") {
            let monitor: NetworkMonitor
            do {
                monitor = try NetworkMonitor()
            } catch let error as CourierError {
                // A sandbox without AF_NETLINK: the library says so clearly; nothing else to show.
                try expect(error.code == .configuration, "unexpected error \(error)")
                return "netlink is not available here: \(error.message)"
            }
            defer { monitor.stop() }
            let status = monitor.current
            let client = try HTTPClient(configuration: .init(baseURL: fixture.apiURL))
            var configuration = ServiceConfiguration(retryPolicy: .none)
            configuration.networkStatus = monitor
            configuration.whenOffline = .fail
            configuration.realTimeParameters = { [("net", monitor.current.description)] }
            let service = ServiceCore(client: client, configuration: configuration)
            let before = fixture.count("/users/1")
            do {
                let user: User = try await service.get("users/1")
                let sent = fixture.server.recordedRequests(path: "/users/1").last?.queryValue("net")
                try expect(status.isOnline, "the call went out while the monitor said offline")
                try expect(user.id == 1, "decoded \(user)")
                try expect(sent == status.description, "the server saw net=\(sent ?? "nothing")")
                return "\(status.isOnline ? "online" : "offline") via \(status.interfaceName ?? "?") "
                    + "(\(status.description)), read from rtnetlink; the call carried net=\(sent ?? "")"
            } catch let error as CourierError {
                // No default route on this machine: the call fails fast, unsent.
                try expect(!status.isOnline && error.code == .offline, "unexpected error \(error)")
                try expect(fixture.count("/users/1") == before, "an offline call reached the server")
                return "offline (no default route); the call failed fast with CourierError.offline, unsent"
            }
        }

        await runner.step("cache-then-network") {
            let cache = try HostScopedCache(
                configuration: .init(
                    rules: [CacheRule(fixture.apiURL.host ?? "127.0.0.1", .forceLifetime(.seconds(60)))],
                    storage: .memoryOnly))
            let client = try HTTPClient(configuration: .init(baseURL: fixture.apiURL, cache: cache))
            let service = ServiceCore(client: client, configuration: ServiceConfiguration(retryPolicy: .none))
            let _: User = try await service.get("users/2")  // fills the cache
            let before = fixture.count("/users/2")
            let clock = ContinuousClock()
            let start = clock.now
            var lines: [String] = []
            var sources: [Bool] = []
            for try await update in service.cacheThenNetwork(Endpoint<User>.get("users/2")) {
                let elapsed = TourRunner.format(clock.now - start).trimmingCharacters(in: .whitespaces)
                sources.append(update.isFromCache)
                lines.append("\(update.isFromCache ? "cache" : "network") after \(elapsed): \(update.value.name)")
            }
            let sent = fixture.count("/users/2") - before
            try expect(sources == [true, false], "got \(sources.count) values, from cache: \(sources)")
            try expect(sent == 1, "the server saw \(sent) requests, not 1")
            return lines.joined(separator: "; ") + " (one request)"
        }
    }
}

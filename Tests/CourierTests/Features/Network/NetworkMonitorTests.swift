import CourierTesting
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// The next status from `source` that satisfies `predicate`, or nil after 10 seconds (the
/// kernel answers in milliseconds; the limit only keeps a broken monitor from hanging).
func nextStatus(
    _ source: any NetworkStatusSource, where predicate: @escaping @Sendable (NetworkStatus) -> Bool
) async -> NetworkStatus? {
    await withTaskGroup(of: NetworkStatus?.self) { group in
        group.addTask {
            for await status in source.statuses() where predicate(status) { return status }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(10))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

@Suite struct NetworkMonitorTests {
    @Test func monitorOfThisMachineAgreesWithTheKernel() throws {
        let monitor = try NetworkMonitor()
        defer { monitor.stop() }
        // What `ip route show default` says, read independently of the monitor.
        let routes = try String(contentsOfFile: "/proc/net/route", encoding: .utf8)
        let defaultDevices = routes.split(separator: "\n").dropFirst().compactMap { line -> String? in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count > 3, fields[1] == "00000000", fields[7] == "00000000" else { return nil }
            return String(fields[0])
        }
        if let device = defaultDevices.first(where: { $0 != "lo" }),
            let state = try? String(contentsOfFile: "/sys/class/net/\(device)/operstate", encoding: .utf8),
            state.hasPrefix("up")
        {
            #expect(monitor.current.isOnline)
            #expect(defaultDevices.contains(monitor.current.interfaceName ?? "?"))
        }
        if defaultDevices.isEmpty, !FileManager.default.fileExists(atPath: "/proc/net/ipv6_route") {
            #expect(!monitor.current.isOnline)
        }
    }

    /// The monitor's descriptors are close-on-exec: a process the app starts does not inherit
    /// them (its wake pipe was made without, so every child held it open).
    @Test func itsDescriptorsAreNotInheritedByChildProcesses() throws {
        let monitor = try NetworkMonitor()
        defer { monitor.stop() }
        for fd in [monitor.wake.read, monitor.wake.write] {
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
        }
    }

    @Test func statusesStartWithTheCurrentStatusAndEndOnStop() async throws {
        let monitor = try NetworkMonitor()
        let statuses = monitor.statuses()
        var iterator = statuses.makeAsyncIterator()
        #expect(await iterator.next() == monitor.current)
        monitor.stop()
        #expect(await iterator.next() == nil)
        monitor.stop()  // idempotent
    }

    @Test func aNamespaceThatDoesNotExistIsAClearError() {
        #expect {
            _ = try NetworkMonitor(namespace: "/var/run/netns/courier-no-such-namespace")
        } throws: { error in
            (error as? CourierError)?.code == .configuration
        }
    }

    @Test(
        .enabled(
            if: NetworkNamespace.isAvailable,
            "needs network namespaces (`ip netns add` and `ip -n`: root or CAP_SYS_ADMIN, iproute2, not a chroot); the injected source covers the rest"
        ))
    func followsLinkAndRouteChangesInANamespace() async throws {
        let namespace = try NetworkNamespace()
        defer { namespace.delete() }
        let monitor = try NetworkMonitor(namespace: namespace.path)
        defer { monitor.stop() }
        // A fresh namespace: only a loopback that is down, no routes.
        #expect(monitor.current == .offline)

        try namespace.addVeth()
        try namespace.bringUp()
        let online = await nextStatus(monitor) { $0.isOnline }
        #expect(online == NetworkStatus(isOnline: true, interface: .ethernet, interfaceName: "v0"))

        // The link goes down: the kernel drops its routes (without always announcing it).
        try namespace.run("link", "set", "v0", "down")
        #expect(await nextStatus(monitor) { !$0.isOnline } == .offline)

        try namespace.bringUp()
        #expect(await nextStatus(monitor) { $0.isOnline }?.interfaceName == "v0")

        // The default route goes; the link stays up.
        try namespace.run("route", "del", "default")
        #expect(await nextStatus(monitor) { !$0.isOnline } == .offline)
        #expect(monitor.current == .offline)
    }

    @Test(
        .enabled(
            if: NetworkNamespace.isAvailable,
            "needs network namespaces (`ip netns add` and `ip -n`: root or CAP_SYS_ADMIN, iproute2, not a chroot); the injected source covers the rest"
        ))
    func serviceFailsFastThenWaitsOnARealMonitor() async throws {
        let namespace = try NetworkNamespace()
        defer { namespace.delete() }
        let monitor = try NetworkMonitor(namespace: namespace.path)
        defer { monitor.stop() }
        let server = try TestServer()
        defer { server.stop() }
        server.route("/status") { _ in .json(["id": 1, "name": "up"]) }
        let service = try ServiceFixture.service(server) {
            $0.networkStatus = monitor
            $0.whenOffline = .fail
            $0.clock = .system
        }
        do {
            let _: ServiceUser = try await service.get("status")
            Issue.record("expected .offline")
        } catch {
            #expect(error.code == .offline)
        }
        #expect(server.count("/status") == 0)

        // A call that waits (on the real clock, up to a minute) goes out once the namespace
        // gets a default route.
        let waiting = Task {
            let user: ServiceUser = try await service.get(
                "status", options: CallOptions.default.with(\.whenOffline, .wait(upTo: .seconds(60))))
            return user
        }
        try namespace.addVeth()
        try namespace.bringUp()
        #expect(try await waiting.value.name == "up")
        #expect(server.count("/status") == 1)
    }
}

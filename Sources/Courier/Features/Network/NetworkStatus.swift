import Foundation

/// What the device's network looks like now: online or not, and through which kind of
/// interface.
///
/// "Online" means a non-loopback interface is up and carries a default route: a request to
/// the internet has somewhere to go. It says nothing of whether the server answers.
public struct NetworkStatus: Sendable, Hashable, CustomStringConvertible {
    /// Whether a non-loopback interface is up with a default route.
    public var isOnline: Bool
    /// The kind of the interface of the preferred default route; nil when offline.
    public var interface: NetworkInterfaceKind?
    /// The name of that interface (`eth0`, `wlan0`); nil when offline or not known.
    public var interfaceName: String?

    /// A status, e.g. from a source of your own.
    /// - Parameters:
    ///   - isOnline: whether a default route leaves through an interface that is up.
    ///   - interface: the kind of that interface, when known.
    ///   - interfaceName: its name, when known.
    public init(isOnline: Bool, interface: NetworkInterfaceKind? = nil, interfaceName: String? = nil) {
        self.isOnline = isOnline
        self.interface = isOnline ? interface : nil
        self.interfaceName = isOnline ? interfaceName : nil
    }

    /// No usable network.
    public static let offline = NetworkStatus(isOnline: false)

    /// A short word for logs and real-time parameters (`net=wifi`): `offline`, or the
    /// interface kind (`ethernet`, `wifi`, `cellular`, `other`).
    public var description: String { isOnline ? (interface ?? .other).rawValue : "offline" }
}

/// The kind of a network interface, where Linux tells it.
public enum NetworkInterfaceKind: String, Hashable, Sendable {
    /// The loopback interface (`lo`); never makes the device online.
    case loopback
    /// Wired Ethernet, and anything that presents itself as Ethernet (veth, bridges, most VMs).
    case ethernet
    /// Wireless LAN (`/sys/class/net/<name>/wireless` exists, or the device type is `wlan`).
    case wifi
    /// A mobile broadband modem (device type `wwan`); many modems do not say, and show as
    /// ethernet or other.
    case cellular
    /// Anything else (tunnels, PPP, unknown).
    case other
}

/// Where the network status comes from: ``NetworkMonitor`` on Linux, or a source of your own
/// (a test double, another platform's monitor).
public protocol NetworkStatusSource: Sendable {
    /// The status now.
    var current: NetworkStatus { get }
    /// The status now, then every change, until the source stops or the consumer cancels.
    func statuses() -> AsyncStream<NetworkStatus>
}

/// What a call does when its network status source says the device is offline.
public enum OfflineBehavior: Sendable, Hashable {
    /// Send anyway (the transport's own errors then tell what happened).
    case proceed
    /// Fail at once with `CourierError.offline`, unsent.
    case fail
    /// Wait until the source reports online, then send; fail with `CourierError.offline`
    /// when it is still offline after `limit` (measured on the service's clock).
    case wait(upTo: Duration)
}

/// The current status and its subscribers: what a status source needs to publish changes.
///
/// Statuses are delivered in the order published; a subscriber that does not keep up sees
/// the newest ones (each subscription buffers the last 16).
package final class NetworkStatusBroadcast: Sendable {
    private struct State {
        var current: NetworkStatus
        var subscribers: [UInt64: AsyncStream<NetworkStatus>.Continuation] = [:]
        var nextID: UInt64 = 0
        var finished = false
    }
    private let state: LockedValue<State>

    package init(_ initial: NetworkStatus) { state = LockedValue(State(current: initial)) }

    package var current: NetworkStatus { state.withLock { $0.current } }

    /// The subscriptions not ended yet.
    package var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Makes `status` current and tells every subscriber, when it differs from the current one.
    package func publish(_ status: NetworkStatus) {
        state.withLock { state in
            guard !state.finished, state.current != status else { return }
            state.current = status
            // Yield under the lock, so that every subscriber sees the changes in one order;
            // yielding never runs a termination handler.
            for continuation in state.subscribers.values { continuation.yield(status) }
        }
    }

    package func statuses() -> AsyncStream<NetworkStatus> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: NetworkStatus.self, bufferingPolicy: .bufferingNewest(16))
        let added = state.withLock { state -> UInt64? in
            continuation.yield(state.current)
            guard !state.finished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = continuation
            return state.nextID
        }
        guard let id = added else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every subscription; later statuses are not published.
    package func finish() {
        let ended = state.withLock { state in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        // Outside the lock: finishing runs the termination handlers, which take it.
        for continuation in ended { continuation.finish() }
    }
}

@_spi(Fuzzing) @testable import Courier

/// A network status source driven by hand, for tests of code that waits for the network or
/// fails while offline.
///
/// ```swift
/// let network = ManualNetworkStatus(.offline)
/// configuration.networkStatus = network
/// network.set(NetworkStatus(isOnline: true, interface: .wifi))
/// ```
final class ManualNetworkStatus: NetworkStatusSource {
    private let broadcast: NetworkStatusBroadcast

    /// - Parameter initial: the status until `set(_:)` changes it.
    init(_ initial: NetworkStatus = .offline) { broadcast = NetworkStatusBroadcast(initial) }

    var current: NetworkStatus { broadcast.current }

    func statuses() -> AsyncStream<NetworkStatus> { broadcast.statuses() }

    /// Makes `status` current and tells every subscriber (when it changed).
    func set(_ status: NetworkStatus) { broadcast.publish(status) }

    /// How many `statuses()` sequences are being consumed (a call waiting for the network
    /// holds one).
    var subscribers: Int { broadcast.subscriberCount }

    /// Waits until at least `count` sequences are being consumed.
    func waitForSubscribers(_ count: Int) async {
        while broadcast.subscriberCount < count { await Task.yield() }
    }
}

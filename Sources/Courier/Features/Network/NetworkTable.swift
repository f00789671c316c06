import Foundation

/// The links and default routes of one network namespace, and the status they add up to.
///
/// Filled from a dump (`RTM_GETLINK`, `RTM_GETROUTE`), so it always holds what the kernel
/// holds: the kernel drops a device's routes when it goes down without always announcing it,
/// and the monitor dumps again after every change instead of mirroring those rules. Pure.
struct NetworkTable {
    var links: [Int32: NetlinkLink] = [:]
    var routes: [NetlinkRoute] = []
    /// The kind of an interface by name, beyond what the hardware type tells (wifi, cellular).
    var kindOf: (NetlinkLink) -> NetworkInterfaceKind = NetworkTable.sysfsKind

    /// Takes one dumped or announced message.
    mutating func apply(_ message: NetlinkMessage) {
        switch message {
        case .link(let link, let removed):
            if removed {
                links[link.index] = nil
            } else {
                links[link.index] = link
            }
        case .defaultRoute(let route, let removed):
            routes.removeAll { $0 == route }
            if !removed { routes.append(route) }
        default:
            break
        }
    }

    /// Online when a default route leaves through a non-loopback interface that is up and
    /// running; the route with the lowest metric (IPv4 first on a tie) names the interface.
    var status: NetworkStatus {
        let usable = routes.compactMap { route -> (route: NetlinkRoute, link: NetlinkLink)? in
            for index in route.interfaces {
                if let link = links[index], link.isUp, !link.isLoopback { return (route, link) }
            }
            return nil
        }
        guard
            let best = usable.min(by: {
                ($0.route.priority, $0.route.family == 2 ? 0 : 1) < ($1.route.priority, $1.route.family == 2 ? 0 : 1)
            })
        else { return .offline }
        return NetworkStatus(isOnline: true, interface: kindOf(best.link), interfaceName: best.link.name)
    }

    /// The kind by hardware type, then by sysfs (`wireless/`, `DEVTYPE=` in `uevent`).
    static func sysfsKind(_ link: NetlinkLink) -> NetworkInterfaceKind {
        if link.isLoopback { return .loopback }
        if link.hardwareType == 801 { return .wifi }  // ARPHRD_IEEE80211
        // A name with a "/" or ".." is no interface of ours to look up.
        if !link.name.isEmpty, !link.name.contains("/"), link.name != ".", link.name != ".." {
            let folder = "/sys/class/net/\(link.name)"
            if FileManager.default.fileExists(atPath: folder + "/wireless") { return .wifi }
            if let uevent = try? String(contentsOfFile: folder + "/uevent", encoding: .utf8) {
                if uevent.contains("DEVTYPE=wlan") { return .wifi }
                if uevent.contains("DEVTYPE=wwan") { return .cellular }
            }
        }
        return link.hardwareType == 1 ? .ethernet : .other
    }
}

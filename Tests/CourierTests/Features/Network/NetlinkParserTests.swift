import Testing

@_spi(Fuzzing) @testable import Courier

/// The rtnetlink bytes as the kernel lays them out, built by hand.
enum NetlinkBytes {
    static func attribute(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
        var bytes = le(UInt16(4 + value.count)) + le(type) + value
        while bytes.count % 4 != 0 { bytes.append(0) }
        return bytes
    }

    static func message(_ type: UInt16, sequence: UInt32 = 0, _ payload: [UInt8]) -> [UInt8] {
        le(UInt32(16 + payload.count)) + le(type) + le(UInt16(0)) + le(sequence) + le(UInt32(0)) + payload
    }

    /// `struct ifinfomsg` with IFLA_IFNAME.
    static func link(index: Int32, type: UInt16 = 1, flags: UInt32, name: String, removed: Bool = false) -> [UInt8] {
        let payload =
            [0, 0] + le(type) + le(index) + le(flags) + le(UInt32(0))
            + attribute(3, Array(name.utf8) + [0])
        return message(removed ? 17 : 16, payload)
    }

    /// `struct rtmsg` with RTA_TABLE, RTA_OIF and RTA_PRIORITY.
    static func route(
        family: UInt8 = 2, destinationLength: UInt8 = 0, table: UInt32 = 254, type: UInt8 = 1, oif: Int32?,
        priority: UInt32? = nil, removed: Bool = false
    ) -> [UInt8] {
        var payload: [UInt8] = [family, destinationLength, 0, 0, UInt8(min(table, 255)), 3, 0, type] + le(UInt32(0))
        payload += attribute(15, le(table))
        if let oif { payload += attribute(4, le(oif)) }
        if let priority { payload += attribute(6, le(priority)) }
        return message(removed ? 25 : 24, payload)
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    static func parse(_ bytes: [UInt8]) -> [NetlinkMessage] {
        bytes.withUnsafeBytes { NetlinkMessage.parse($0) }
    }
}

@Suite struct NetlinkParserTests {
    @Test func linkMessageGivesIndexFlagsTypeAndName() {
        let messages = NetlinkBytes.parse(NetlinkBytes.link(index: 7, flags: 0x1 | 0x40, name: "eth0"))
        #expect(messages == [.link(NetlinkLink(index: 7, hardwareType: 1, flags: 0x41, name: "eth0"), removed: false)])
        guard case .link(let link, _) = messages.first else { return }
        #expect(link.isUp)
        #expect(!link.isLoopback)
    }

    @Test func removedLinkAndLoopback() {
        let messages = NetlinkBytes.parse(
            NetlinkBytes.link(index: 1, type: 772, flags: 0x49, name: "lo", removed: true))
        guard case .link(let link, let removed) = messages.first else {
            Issue.record("no link in \(messages)")
            return
        }
        #expect(removed)
        #expect(link.isLoopback)
    }

    @Test func defaultRouteWithInterfaceMetricAndTable() {
        let messages = NetlinkBytes.parse(NetlinkBytes.route(oif: 3, priority: 600))
        #expect(
            messages == [
                .defaultRoute(NetlinkRoute(family: 2, table: 254, interfaces: [3], priority: 600), removed: false)
            ])
    }

    @Test func onlyUnicastDefaultRoutesOutsideTheLocalTableCount() {
        let bytes =
            NetlinkBytes.route(destinationLength: 24, oif: 3)  // 10.0.0.0/24: not a default route
            + NetlinkBytes.route(type: 7, oif: 1)  // unreachable default
            + NetlinkBytes.route(table: 255, oif: 3)  // the local table
            + NetlinkBytes.route(family: 10, table: 1000, oif: 4, removed: true)  // IPv6, table 1000, removed
        #expect(
            NetlinkBytes.parse(bytes) == [
                .other, .other, .other,
                .defaultRoute(NetlinkRoute(family: 10, table: 1000, interfaces: [4]), removed: true),
            ])
    }

    @Test func doneErrorAndTruncatedMessages() {
        let error = NetlinkBytes.message(2, sequence: 9, NetlinkBytes.le(Int32(-16)) + [UInt8](repeating: 0, count: 16))
        var bytes = NetlinkBytes.message(3, sequence: 5, [0, 0, 0, 0]) + error
        #expect(NetlinkBytes.parse(bytes) == [.done(sequence: 5), .error(errno: 16, sequence: 9)])
        // A length past the end stops the parse instead of reading beyond the buffer.
        bytes += NetlinkBytes.le(UInt32(400)) + [UInt8](repeating: 0, count: 12)
        #expect(NetlinkBytes.parse(bytes).count == 2)
        #expect(NetlinkBytes.parse([1, 2, 3]).isEmpty)
    }

    @Test func dumpRequestIsAWellFormedHeader() {
        let request = NetlinkMessage.dumpRequest(type: NetlinkMessage.getRoute, sequence: 42)
        #expect(request.count == 28)
        #expect(Array(request[0..<4]) == NetlinkBytes.le(UInt32(28)))
        #expect(Array(request[4..<6]) == NetlinkBytes.le(UInt16(26)))
        #expect(Array(request[6..<8]) == NetlinkBytes.le(UInt16(0x301)))
        #expect(Array(request[8..<12]) == NetlinkBytes.le(UInt32(42)))
    }
}

@Suite struct NetworkTableTests {
    private func table(_ bytes: [UInt8]) -> NetworkTable {
        var table = NetworkTable()
        table.kindOf = { $0.isLoopback ? .loopback : $0.name.hasPrefix("wl") ? .wifi : .ethernet }
        for message in NetlinkBytes.parse(bytes) { table.apply(message) }
        return table
    }

    @Test func noDefaultRouteIsOffline() {
        #expect(table(NetlinkBytes.link(index: 2, flags: 0x41, name: "eth0")).status == .offline)
    }

    @Test func upInterfaceWithDefaultRouteIsOnline() {
        let status = table(NetlinkBytes.link(index: 2, flags: 0x41, name: "eth0") + NetlinkBytes.route(oif: 2)).status
        #expect(status == NetworkStatus(isOnline: true, interface: .ethernet, interfaceName: "eth0"))
        #expect(status.description == "ethernet")
    }

    @Test func downOrNotRunningOrLoopbackInterfaceIsOffline() {
        #expect(
            table(NetlinkBytes.link(index: 2, flags: 0x40, name: "eth0") + NetlinkBytes.route(oif: 2)).status
                == .offline)
        #expect(
            table(NetlinkBytes.link(index: 2, flags: 0x1, name: "eth0") + NetlinkBytes.route(oif: 2)).status == .offline
        )
        #expect(
            table(NetlinkBytes.link(index: 1, type: 772, flags: 0x49, name: "lo") + NetlinkBytes.route(oif: 1)).status
                == .offline)
        #expect(table(NetlinkBytes.route(oif: 9)).status == .offline)  // a route through an unknown link
    }

    @Test func lowestMetricNamesTheInterface() {
        let bytes =
            NetlinkBytes.link(index: 2, flags: 0x41, name: "eth0")
            + NetlinkBytes.link(index: 3, flags: 0x41, name: "wlan0")
            + NetlinkBytes.route(oif: 2, priority: 100) + NetlinkBytes.route(oif: 3, priority: 600)
        #expect(table(bytes).status.interfaceName == "eth0")
        // The wired route goes away: the Wi-Fi one is next.
        let rest = table(bytes + NetlinkBytes.route(oif: 2, priority: 100, removed: true)).status
        #expect(rest == NetworkStatus(isOnline: true, interface: .wifi, interfaceName: "wlan0"))
        #expect(rest.description == "wifi")
        // The link goes away: offline.
        let gone = table(
            bytes + NetlinkBytes.link(index: 2, flags: 0, name: "eth0", removed: true)
                + NetlinkBytes.link(index: 3, flags: 0x1, name: "wlan0"))
        #expect(gone.status == .offline)
        #expect(gone.status.description == "offline")
    }

    @Test func loopbackKindFromSysfsRules() {
        #expect(NetworkTable.sysfsKind(NetlinkLink(index: 1, hardwareType: 772, flags: 0x49, name: "lo")) == .loopback)
        #expect(NetworkTable.sysfsKind(NetlinkLink(index: 5, hardwareType: 801, flags: 0x41, name: "x")) == .wifi)
        #expect(NetworkTable.sysfsKind(NetlinkLink(index: 5, hardwareType: 65534, flags: 0x41, name: "tun9")) == .other)
        // A name that is not a plain file name is never looked up in /sys.
        #expect(NetworkTable.sysfsKind(NetlinkLink(index: 5, hardwareType: 1, flags: 0x41, name: "../x")) == .ethernet)
    }
}

/// The rtnetlink messages the network monitor reads, parsed from the kernel's bytes.
///
/// The layouts are the kernel's ABI (`linux/netlink.h`, `linux/rtnetlink.h`, `linux/if_link.h`),
/// in host byte order; Swift's Glibc module does not import them, so the few fields used are
/// read by offset here. Pure: tested with bytes built by hand.
enum NetlinkMessage: Equatable {
    /// `RTM_NEWLINK` / `RTM_DELLINK`.
    case link(NetlinkLink, removed: Bool)
    /// `RTM_NEWROUTE` / `RTM_DELROUTE` of a default route (other routes are left out).
    case defaultRoute(NetlinkRoute, removed: Bool)
    /// An address came or went (`RTM_NEWADDR` / `RTM_DELADDR`).
    case address
    /// The end of a dump (`NLMSG_DONE`).
    case done(sequence: UInt32)
    /// `NLMSG_ERROR`: `errno` 0 is an acknowledgement.
    case error(errno: Int32, sequence: UInt32)
    /// Anything else.
    case other

    // Message types and flags (linux/netlink.h, linux/rtnetlink.h).
    static let doneType: UInt16 = 3
    static let errorType: UInt16 = 2
    static let newLink: UInt16 = 16
    static let delLink: UInt16 = 17
    static let getLink: UInt16 = 18
    static let newAddress: UInt16 = 20
    static let delAddress: UInt16 = 21
    static let newRoute: UInt16 = 24
    static let delRoute: UInt16 = 25
    static let getRoute: UInt16 = 26
    static let requestFlag: UInt16 = 0x1
    static let dumpFlags: UInt16 = 0x300
    static let headerSize = 16

    /// Multicast groups: RTMGRP_LINK, IPV4_IFADDR, IPV4_ROUTE, IPV6_IFADDR, IPV6_ROUTE.
    static let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400

    /// Every message in one datagram; a truncated one ends the list.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> [NetlinkMessage] {
        var messages: [NetlinkMessage] = []
        var offset = 0
        while offset + headerSize <= bytes.count {
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            guard length >= headerSize, offset + length <= bytes.count else { break }
            let type = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
            let sequence = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + headerSize)..<(offset + length)])
            messages.append(message(type: type, sequence: sequence, payload: payload))
            offset += align(length)
        }
        return messages
    }

    private static func message(type: UInt16, sequence: UInt32, payload: UnsafeRawBufferPointer) -> NetlinkMessage {
        switch type {
        case doneType: return .done(sequence: sequence)
        case errorType:
            let code = payload.count >= 4 ? payload.loadUnaligned(as: Int32.self) : 0
            return .error(errno: -code, sequence: sequence)
        case newLink, delLink:
            guard let link = NetlinkLink(payload) else { return .other }
            return .link(link, removed: type == delLink)
        case newRoute, delRoute:
            guard let route = NetlinkRoute(payload) else { return .other }
            return .defaultRoute(route, removed: type == delRoute)
        case newAddress, delAddress: return .address
        default: return .other
        }
    }

    static func align(_ length: Int) -> Int { (length + 3) & ~3 }

    /// The attributes (`struct rtattr`: length, type, value) from `offset` on.
    static func attributes(_ payload: UnsafeRawBufferPointer, from offset: Int) -> [(
        type: UInt16, value: UnsafeRawBufferPointer
    )] {
        var found: [(type: UInt16, value: UnsafeRawBufferPointer)] = []
        var at = offset
        while at + 4 <= payload.count {
            let length = Int(payload.loadUnaligned(fromByteOffset: at, as: UInt16.self))
            let type = payload.loadUnaligned(fromByteOffset: at + 2, as: UInt16.self) & 0x3FFF
            guard length >= 4, at + length <= payload.count else { break }
            found.append((type, UnsafeRawBufferPointer(rebasing: payload[(at + 4)..<(at + length)])))
            at += align(length)
        }
        return found
    }

    /// A netlink request that dumps every object of `type` (`RTM_GETLINK`, `RTM_GETROUTE`)
    /// of every address family.
    static func dumpRequest(type: UInt16, sequence: UInt32) -> [UInt8] {
        // The family header after nlmsghdr: ifinfomsg (16 bytes) or rtmsg (12), all zero (AF_UNSPEC).
        let body = type == getLink ? 16 : 12
        var bytes = [UInt8](repeating: 0, count: headerSize + body)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(headerSize + body), toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: type, toByteOffset: 4, as: UInt16.self)
            raw.storeBytes(of: requestFlag | dumpFlags, toByteOffset: 6, as: UInt16.self)
            raw.storeBytes(of: sequence, toByteOffset: 8, as: UInt32.self)
        }
        return bytes
    }
}

/// A network interface as `RTM_NEWLINK` describes it (`struct ifinfomsg` and `IFLA_IFNAME`).
struct NetlinkLink: Equatable {
    var index: Int32
    /// `ARPHRD_*`: 1 Ethernet, 772 loopback, 801 802.11, 65534 none (tun), 512 PPP.
    var hardwareType: UInt16
    var flags: UInt32
    var name: String

    static let up: UInt32 = 0x1
    static let loopbackFlag: UInt32 = 0x8
    static let running: UInt32 = 0x40

    var isUp: Bool { flags & Self.up != 0 && flags & Self.running != 0 }
    var isLoopback: Bool { flags & Self.loopbackFlag != 0 || hardwareType == 772 }

    init(index: Int32, hardwareType: UInt16, flags: UInt32, name: String) {
        self.index = index
        self.hardwareType = hardwareType
        self.flags = flags
        self.name = name
    }

    init?(_ payload: UnsafeRawBufferPointer) {
        guard payload.count >= 16 else { return nil }
        hardwareType = payload.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
        index = payload.loadUnaligned(fromByteOffset: 4, as: Int32.self)
        flags = payload.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
        name = ""
        for attribute in NetlinkMessage.attributes(payload, from: 16) where attribute.type == 3 {  // IFLA_IFNAME
            name = String(decoding: attribute.value.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

/// A default route as `RTM_NEWROUTE` describes it (`struct rtmsg` and its attributes).
struct NetlinkRoute: Hashable {
    /// `AF_INET` (2) or `AF_INET6` (10).
    var family: UInt8
    var table: UInt32
    /// The outgoing interfaces (one, or a multipath route's next hops).
    var interfaces: [Int32]
    /// The metric; the lowest wins.
    var priority: UInt32

    init(family: UInt8, table: UInt32 = 254, interfaces: [Int32], priority: UInt32 = 0) {
        self.family = family
        self.table = table
        self.interfaces = interfaces
        self.priority = priority
    }

    /// nil for anything but a unicast default route outside the local table.
    init?(_ payload: UnsafeRawBufferPointer) {
        guard payload.count >= 12 else { return nil }
        family = payload[0]
        let destinationLength = payload[1]
        table = UInt32(payload[4])
        let type = payload[7]
        // RTN_UNICAST only (an "unreachable" default is no way out); RT_TABLE_LOCAL never routes out.
        guard destinationLength == 0, type == 1 else { return nil }
        interfaces = []
        priority = 0
        for attribute in NetlinkMessage.attributes(payload, from: 12) {
            switch attribute.type {
            case 4 where attribute.value.count >= 4:  // RTA_OIF
                interfaces.append(attribute.value.loadUnaligned(as: Int32.self))
            case 6 where attribute.value.count >= 4:  // RTA_PRIORITY
                priority = attribute.value.loadUnaligned(as: UInt32.self)
            case 15 where attribute.value.count >= 4:  // RTA_TABLE
                table = attribute.value.loadUnaligned(as: UInt32.self)
            case 9:  // RTA_MULTIPATH: struct rtnexthop { u16 len; u8 flags, hops; i32 ifindex; }…
                var at = 0
                let hops = attribute.value
                while at + 8 <= hops.count {
                    let length = Int(hops.loadUnaligned(fromByteOffset: at, as: UInt16.self))
                    guard length >= 8 else { break }
                    interfaces.append(hops.loadUnaligned(fromByteOffset: at + 4, as: Int32.self))
                    at += NetlinkMessage.align(length)
                }
            default:
                break
            }
        }
        guard table != 255 else { return nil }
    }
}

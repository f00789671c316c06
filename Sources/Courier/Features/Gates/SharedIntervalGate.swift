/// A request-interval table shared by the processes of a fleet (CourierRedis), consulted by
/// `RequestIntervalGate` before its own table.
package protocol SharedIntervalGate: Sendable {
    /// Decides for a call to `key` fleet-wide and books it (a delayed call books its future
    /// slot); nil when the store cannot answer, and the local table decides.
    func admit(key: String, interval: Duration, delay: Bool) async -> SharedIntervalVerdict?

    /// Gives back the slot a delayed call booked (`.wait`'s `slot`) and will not use, when no
    /// call has booked after it, so the next call may go from the slot before it.
    func release(key: String, interval: Duration, slot: Int64) async
}

extension SharedIntervalGate {
    package func release(key: String, interval: Duration, slot: Int64) async {}
}

/// What a shared interval table decided.
package enum SharedIntervalVerdict: Sendable, Equatable {
    case proceed
    /// Wait `Duration`, then send: the call has booked `slot` (in the table's own terms).
    case wait(Duration, slot: Int64)
    case drop(remaining: Duration)
}

extension RequestIntervalGate {
    /// `key` without what differs between processes for the same request: a
    /// `RequestIdentity` names the response type by its address, and the client, a service's
    /// cookie jar and a service with adapters of its own by numbers of the process's own (the
    /// jar's cookies are in its credential digest, which stays).
    ///
    /// Only the identity's own lines are left out: they come last, from its `@as: ` line on
    /// (a header value holds no line break, and a field name no `@`). A header field named
    /// `As`, `Client` or `Jar` is written before them as `as: …`, and two calls that differ
    /// only in it are two requests.
    package static func fleetKey(_ key: String) -> String {
        let marker = Array("\n@as: ".utf8)
        let bytes = Array(key.utf8)
        guard bytes.count >= marker.count,
            let start = stride(from: bytes.count - marker.count, through: 0, by: -1).first(where: {
                bytes[$0..<$0 + marker.count].elementsEqual(marker)
            })
        else { return key }
        var lines = [String(decoding: bytes[..<start], as: UTF8.self)[...]]
        let rest = String(decoding: bytes[(start + marker.count)...], as: UTF8.self)
        for line in rest.split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
        where !line.hasPrefix("@client: ") && !line.hasPrefix("@jar: ") && !line.hasPrefix("@service: ") {
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

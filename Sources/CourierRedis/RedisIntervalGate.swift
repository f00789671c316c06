import Courier
import Foundation

/// The fleet-wide request-interval table: one Redis key per request identity (keyed digest),
/// holding the time of the last booked send, checked and booked by one script on Redis's own
/// clock, so the processes' clocks do not matter.
struct RedisIntervalGate: SharedIntervalGate {
    let fleet: RedisFleet

    func admit(key: String, interval: Duration, delay: Bool) async -> SharedIntervalVerdict? {
        guard interval >= .milliseconds(1) else { return .proceed }
        let name = fleet.key("i", fleet.keyedDigest(RequestIntervalGate.fleetKey(key)))
        let reply = await fleet.client.eval(
            Self.script, keys: [name],
            arguments: [Data(String(interval.redisMilliseconds).utf8), Data((delay ? "delay" : "drop").utf8)])
        guard case .success(.array(let items)) = reply, items.count >= 2, let code = items[0].integer,
            let milliseconds = items[1].integer
        else { return nil }
        switch code {
        case 0: return .proceed
        case 1: return .wait(.milliseconds(milliseconds), slot: items.count > 2 ? items[2].integer ?? -1 : -1)
        default: return .drop(remaining: .milliseconds(milliseconds))
        }
    }

    func release(key: String, interval: Duration, slot: Int64) async {
        guard slot >= 0, interval >= .milliseconds(1) else { return }
        let name = fleet.key("i", fleet.keyedDigest(RequestIntervalGate.fleetKey(key)))
        _ = await fleet.client.eval(
            Self.releaseScript, keys: [name],
            arguments: [Data(String(slot).utf8), Data(String(interval.redisMilliseconds).utf8)])
    }

    /// KEYS: the endpoint's slot. ARGV: interval in ms, "drop" or "delay". A value without a
    /// time to live (not a booking: a neighbour's on the same Redis) counts as none; one of
    /// another type than a string is deleted first.
    /// Returns {0, 0} proceed, {1, ms, slot} wait (the booked send time, Redis ms), {2, ms} drop.
    static let script =
        RedisScripts.clearOtherType + """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local interval = tonumber(ARGV[1])
            clearOtherType(KEYS[1], 'string')
            local last = tonumber(redis.call('GET', KEYS[1]))
            -- Every booking expires: a value without a time to live was not written by one.
            if last and redis.call('PTTL', KEYS[1]) < 0 then last = nil end
            if (not last) or last + interval <= now then
              redis.call('SET', KEYS[1], now, 'PX', interval)
              return {0, 0}
            end
            local allowed = last + interval
            if ARGV[2] == 'drop' then return {2, allowed - now} end
            redis.call('SET', KEYS[1], allowed, 'PX', allowed - now + interval)
            return {1, allowed - now, allowed}
            """

    /// KEYS: the endpoint's slot. ARGV: the booked send time (ms), interval in ms. While that
    /// booking is the last one, moves it back one interval (it expires when the interval of
    /// the booking before it ends), so the next call may take the slot.
    static let releaseScript = """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local slot = tonumber(ARGV[1])
        if redis.call('TYPE', KEYS[1]).ok ~= 'string' then return 0 end
        if tonumber(redis.call('GET', KEYS[1])) ~= slot then return 0 end
        if slot <= now then redis.call('DEL', KEYS[1]) return 1 end
        redis.call('SET', KEYS[1], slot - tonumber(ARGV[2]), 'PX', slot - now)
        return 1
        """
}

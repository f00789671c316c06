import Foundation
import HTTPTypes

/// The parsed `Cache-Control` directives of a request or response (RFC 9111 §5.2).
///
/// Unknown directives are ignored; a malformed delta-seconds value makes the directive count
/// as present with the most conservative meaning (zero), and so do `max-age` values that
/// disagree; digits past the largest integer are 2³¹ (RFC 9111 §1.2.2). Directives of a
/// shared cache (`s-maxage`, `proxy-revalidate`) are ignored.
struct CacheControl: Sendable, Equatable {
    var maxAge: Int?
    var maxStale: Int?
    /// `max-stale` without a value: any staleness is acceptable.
    var maxStaleUnbounded = false
    var minFresh: Int?
    var noCache = false
    var noStore = false
    var onlyIfCached = false
    var mustRevalidate = false
    var isPrivate = false
    var isPublic = false

    init() {}

    /// Parses every `Cache-Control` field in `fields` (and `Pragma: no-cache` when no
    /// `Cache-Control` is present, as RFC 9111 §5.4 allows for requests).
    init(_ fields: HTTPFields) {
        let values = fields[values: .cacheControl]
        if values.isEmpty {
            if let pragma = fields[CacheFieldName.pragma], pragma.lowercased().contains("no-cache") {
                noCache = true
            }
            return
        }
        for value in values {
            for directive in Self.split(value) { apply(directive.name, directive.argument) }
        }
    }

    private mutating func apply(_ name: Substring, _ argument: Substring?) {
        func seconds() -> Int {
            // RFC 9111 §1.2.2: digits only (`Int(_:)` alone also takes a sign: `+600` read as
            // 600); digits past the largest integer mean 2³¹, not a malformed value.
            guard let argument, !argument.isEmpty, argument.utf8.allSatisfy({ (48...57).contains($0) }) else {
                return 0
            }
            return Int(argument) ?? 2_147_483_648
        }
        switch name.lowercased() {
        case "max-age":
            // RFC 9111 §4.2.1: conflicting duplicates make the response stale (a lifetime of 0).
            let value = seconds()
            maxAge = maxAge.map { $0 == value ? value : 0 } ?? value
        case "max-stale":
            if argument == nil { maxStaleUnbounded = true } else { maxStale = seconds() }
        case "min-fresh": minFresh = seconds()
        case "no-cache": noCache = true
        case "no-store": noStore = true
        case "only-if-cached": onlyIfCached = true
        // `proxy-revalidate` and `s-maxage` apply to shared caches only (RFC 9111 §5.2.2.8, §5.2.2.10).
        case "must-revalidate": mustRevalidate = true
        case "private": isPrivate = true
        case "public": isPublic = true
        default: break
        }
    }

    /// Splits a directive list on commas outside quoted strings. A backslash in a quoted string
    /// escapes the next character (RFC 9110 §5.6.4): an escaped quote does not end the string.
    /// A value whose last quoted string is never closed is split again with `quoted` false
    /// (quotes as plain characters): the open string took in every directive after it, a
    /// `no-store` too.
    private static func split(_ value: String, quoted: Bool = true) -> [(name: Substring, argument: Substring?)] {
        var result: [(Substring, Substring?)] = []
        var start = value.startIndex
        var inQuotes = false
        var index = value.startIndex
        func flush(_ end: String.Index) {
            let part = value[start..<end].trimmingCharacters(in: .whitespaces)
            guard !part.isEmpty else { return }
            if let eq = part.firstIndex(of: "=") {
                let name = Substring(part[..<eq].trimmingCharacters(in: .whitespaces))
                var argument = Substring(part[part.index(after: eq)...].trimmingCharacters(in: .whitespaces))
                if argument.hasPrefix("\""), argument.hasSuffix("\""), argument.count >= 2 {
                    argument = argument.dropFirst().dropLast()
                }
                result.append((name, argument))
            } else {
                result.append((Substring(part), nil))
            }
        }
        while index < value.endIndex {
            let character = value[index]
            if inQuotes, character == "\\", value.index(after: index) < value.endIndex {
                index = value.index(after: index)
            } else if character == "\"", quoted {
                inQuotes.toggle()
            } else if character == ",", !inQuotes {
                flush(index)
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        if inQuotes { return split(value, quoted: false) }
        flush(value.endIndex)
        return result
    }
}

/// Field names the cache needs that swift-http-types does not predefine.
enum CacheFieldName {
    static let age = HTTPField.Name("Age")!
    static let pragma = HTTPField.Name("Pragma")!
    static let keepAlive = HTTPField.Name("Keep-Alive")!
    static let proxyConnection = HTTPField.Name("Proxy-Connection")!
    static let proxyAuthenticate = HTTPField.Name("Proxy-Authenticate")!
    static let warning = HTTPField.Name("Warning")!
}

/// Parsing of HTTP dates (RFC 9110 §5.6.7): IMF-fixdate, the obsolete RFC 850 form and
/// asctime, without `DateFormatter` (slow and locale-sensitive).
enum HTTPDateFormat {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The date in `string`, or nil when it is not a valid HTTP date.
    static func parse(_ string: String) -> Date? {
        // Tokens: split on spaces, commas, colons and dashes.
        let tokens = string.split(whereSeparator: { $0 == " " || $0 == "," || $0 == ":" || $0 == "-" })
        guard tokens.count >= 7 else { return nil }
        var day: Int?
        var month: Int?
        var year: Int?
        var clock: [Int] = []
        if let monthIndex = months.firstIndex(of: tokens[1].lowercased()) {
            // asctime: Sun Nov  6 08:49:37 1994
            month = monthIndex + 1
            day = Int(tokens[2])
            clock = tokens[3...5].compactMap { Int($0) }
            year = Int(tokens[6])
        } else {
            // IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" or RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT".
            day = Int(tokens[1])
            month = months.firstIndex(of: tokens[2].lowercased()).map { $0 + 1 }
            year = Int(tokens[3])
            clock = tokens[4...6].compactMap { Int($0) }
            if let value = year, tokens[3].count == 2 { year = value < 70 ? 2000 + value : 1900 + value }
        }
        // The year is bounded so the day arithmetic below cannot overflow on a hostile header.
        guard let day, let month, let year, (0...9999).contains(year), clock.count == 3, (1...31).contains(day),
            clock.allSatisfy({ $0 >= 0 }), clock[0] < 24, clock[1] < 60, clock[2] < 61
        else { return nil }
        return Date(
            timeIntervalSince1970: TimeInterval(
                daysFromCivil(year, month, day) * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]))
    }

    /// The first and last second an IMF-fixdate can write: years 0001 to 9999.
    static let representableSeconds: ClosedRange<Double> = -62_135_596_800...253_402_300_799

    /// The IMF-fixdate form of `date` (`Sun, 06 Nov 1994 08:49:37 GMT`). A date outside years
    /// 0001–9999 is written as the nearest of them, and a NaN date as the epoch: a clock or a
    /// stored time can hold anything, and converting it to `Int` must not trap.
    static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        let seconds =
            interval.isNaN
            ? 0
            : Int(min(max(interval.rounded(.down), representableSeconds.lowerBound), representableSeconds.upperBound))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilFromDays(days)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let monthName = months[month - 1].prefix(1).uppercased() + months[month - 1].dropFirst()
        return
            "\(weekday), \(two(day)) \(monthName) \(String(repeating: "0", count: max(0, 4 - String(year).count)))\(year) \(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)) GMT"
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    static func daysFromCivil(_ y: Int, _ m: Int, _ d: Int) -> Int {
        let year = m <= 2 ? y - 1 : y
        let era = (year >= 0 ? year : year - 399) / 400
        let yoe = year - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civilFromDays(_ z: Int) -> (Int, Int, Int) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

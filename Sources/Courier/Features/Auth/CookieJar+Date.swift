import Foundation

extension CookieJar {
    /// The date an `Expires` attribute names, read by the cookie-date algorithm of RFC 6265
    /// §5.1.1 (kept by 6265bis), or nil when it names none and the attribute is ignored.
    ///
    /// Not the HTTP date parser: servers write cookie dates in many layouts (without the
    /// weekday, as JavaScript's `Date` prints them, with two-digit years in any of them), and
    /// browsers read them all by their tokens: the first time, day, month and year found, in
    /// any order, the rest (weekday, zone) ignored. A year 70–99 is 19xx, 0–69 is 20xx; a day
    /// the month lacks, a year before 1601 or a time past 23:59:59 is no date.
    static func cookieDate(_ text: String) -> Date? {
        var time: (hour: Int, minute: Int, second: Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in text.utf8.split(whereSeparator: isDateDelimiter) {
            if time == nil, let found = hmsTime(token) {
                time = found
            } else if day == nil, let found = leadingNumber(token, digits: 1...2) {
                day = found
            } else if month == nil, let found = monthNumber(token) {
                month = found
            } else if year == nil, let found = leadingNumber(token, digits: 2...4) {
                year = found
            }
        }
        guard let time, let day, let month, var year else { return nil }
        if (70...99).contains(year) {
            year += 1900
        } else if (0...69).contains(year) {
            year += 2000
        }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard year >= 1601, (1...lengths[month - 1]).contains(day), time.hour <= 23, time.minute <= 59,
            time.second <= 59
        else { return nil }
        let seconds =
            HTTPDateFormat.daysFromCivil(year, month, day) * 86_400 + time.hour * 3600 + time.minute * 60
            + time.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// `delimiter` of RFC 6265 §5.1.1: HTAB and the printable ASCII that is no digit, letter or `:`.
    private static func isDateDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte) || (0x5B...0x60).contains(byte)
            || (0x7B...0x7E).contains(byte)
    }

    /// The number a token starts with when it has `digits` digits and no more (what follows,
    /// if anything, is ignored).
    private static func leadingNumber(_ token: Substring.UTF8View, digits: ClosedRange<Int>) -> Int? {
        let run = digitRun(token)
        return digits.contains(run.count) ? number(run) : nil
    }

    /// `hms-time`: three fields of one or two digits joined by `:`, then anything but a digit.
    private static func hmsTime(_ token: Substring.UTF8View) -> (hour: Int, minute: Int, second: Int)? {
        var fields: [Int] = []
        var rest = token
        for index in 0..<3 {
            let run = digitRun(rest)
            guard (1...2).contains(run.count) else { return nil }
            fields.append(number(run))
            rest = rest.dropFirst(run.count)
            guard index == 2 || rest.first == UInt8(ascii: ":") else { return nil }
            rest = rest.dropFirst()
        }
        return (fields[0], fields[1], fields[2])
    }

    private static func digitRun(_ token: Substring.UTF8View) -> Substring.UTF8View {
        token.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func number(_ digits: Substring.UTF8View) -> Int {
        digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// The month a token starts with (`jan` to `dec`, any case), 1 to 12.
    private static func monthNumber(_ token: Substring.UTF8View) -> Int? {
        guard token.count >= 3 else { return nil }
        let name = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
        return ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
            .firstIndex(of: name).map { $0 + 1 }
    }
}

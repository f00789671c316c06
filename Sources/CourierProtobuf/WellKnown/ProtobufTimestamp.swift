import Foundation

/// `google.protobuf.Timestamp`: a point in time as seconds and nanoseconds since
/// 1970-01-01T00:00:00Z (UTC, leap seconds smeared), exact to the nanosecond.
///
/// Generated models use this rather than `Date`: a `Date` is a `Double` of seconds since 2001,
/// which keeps only about a tenth of a microsecond around today (less further away), so a
/// timestamp read into a `Date` and sent back would change its nanoseconds. Convert with
/// ``init(_:)`` and ``date``.
///
/// The wire value is range-checked both ways as the protobuf spec requires: `seconds` within
/// 0001-01-01T00:00:00Z...9999-12-31T23:59:59Z and `nanos` within 0...999,999,999; outside
/// them decoding is a `.decoding` error and encoding an `.encoding` error.
public struct ProtobufTimestamp: Sendable, Hashable, Comparable, Codable {
    /// Seconds since 1970-01-01T00:00:00Z; negative before.
    public var seconds: Int64
    /// The fraction of the second, 0...999,999,999 (also before 1970: −0.5 s is −1 s + 500,000,000 ns).
    public var nanos: Int32

    /// A point in time, exact to the nanosecond.
    /// - Parameters:
    ///   - seconds: seconds since 1970-01-01T00:00:00Z.
    ///   - nanos: the fraction of the second in nanoseconds, 0...999,999,999.
    public init(seconds: Int64 = 0, nanos: Int32 = 0) {
        self.seconds = seconds
        self.nanos = nanos
    }

    /// The timestamp nearest to `date` (to the nanosecond).
    public init(_ date: Date) {
        let interval = date.timeIntervalSince1970
        let whole = interval.rounded(.down)
        var nanos = ((interval - whole) * 1e9).rounded()
        var seconds = Int64(exactly: whole) ?? (whole < 0 ? .min : .max)  // Out of range: refused when sent.
        if nanos >= 1e9 {
            seconds &+= 1
            nanos -= 1e9
        }
        self.init(seconds: seconds, nanos: nanos.isFinite ? Int32(nanos) : 0)
    }

    /// The `Date` nearest to this timestamp (a `Date` keeps about 0.1 µs around today).
    public var date: Date {
        Date(timeIntervalSince1970: Double(seconds) + Double(nanos) / 1e9)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.seconds, lhs.nanos) < (rhs.seconds, rhs.nanos)
    }

    /// 0001-01-01T00:00:00Z...9999-12-31T23:59:59Z, the range of the protobuf spec.
    static let validSeconds: ClosedRange<Int64> = -62_135_596_800...253_402_300_799

    /// Throws when the value is outside the spec's range.
    func check() throws(ProtobufBridgeError) {
        guard Self.validSeconds.contains(seconds) else {
            throw ProtobufBridgeError(
                message: "google.protobuf.Timestamp seconds \(seconds) is outside 0001-01-01...9999-12-31 "
                    + "(\(Self.validSeconds))")
        }
        guard (0...999_999_999).contains(nanos) else {
            throw ProtobufBridgeError(
                message: "google.protobuf.Timestamp nanos \(nanos) is outside 0...999999999")
        }
    }
}

extension ProtobufTimestamp: ProtobufDirectCodable {
    /// Reads fields 1 (`seconds`) and 2 (`nanos`). - Throws: when they are out of range.
    public init(protobuf message: ProtobufMessageReader) throws {
        self.init(seconds: try message.int64(1), nanos: try message.int32(2))
        try check()
    }

    /// Writes fields 1 and 2. - Throws: when the value is out of range.
    public func write(protobuf message: inout ProtobufMessageWriter) throws {
        try check()
        try message.setInt64(1, seconds)
        try message.setInt32(2, nanos)
    }
}

/// `google.protobuf.Duration` as Swift's `Duration`: exact both ways for whole nanoseconds.
///
/// The wire value is checked as the protobuf spec requires: `seconds` within ±315,576,000,000
/// (10,000 years), `nanos` within ±999,999,999 and of the same sign as `seconds` when both are
/// non-zero. Encoding a `Duration` with a fraction of a nanosecond (Swift keeps attoseconds) is
/// an `.encoding` error rather than a silent rounding.
extension Duration: ProtobufDirectCodable {
    /// Reads fields 1 (`seconds`) and 2 (`nanos`). - Throws: when they break the spec's rules.
    public init(protobuf message: ProtobufMessageReader) throws {
        let seconds = try message.int64(1)
        let nanos = try message.int32(2)
        try checkDuration(seconds, nanos)
        self.init(secondsComponent: seconds, attosecondsComponent: Int64(nanos) * 1_000_000_000)
    }

    /// Writes fields 1 and 2. - Throws: for a fraction of a nanosecond or more than 10,000 years.
    public func write(protobuf message: inout ProtobufMessageWriter) throws {
        // `components` trap past `Int64.max` seconds (a `Duration` holds about ±1.7 × 10²⁰):
        // a value past the spec's range is refused before they are read.
        let limit = Duration.seconds(checkedDurationSeconds.upperBound + 1)
        guard self < limit, self > .zero - limit else {
            throw ProtobufBridgeError(
                message: "google.protobuf.Duration \(self / .seconds(1)) seconds is outside ±315576000000 "
                    + "(10,000 years)")
        }
        var (seconds, attoseconds) = components
        // Give both parts the sign of the whole, as the spec requires.
        if seconds < 0 && attoseconds > 0 {
            seconds += 1
            attoseconds -= 1_000_000_000_000_000_000
        } else if seconds > 0 && attoseconds < 0 {
            seconds -= 1
            attoseconds += 1_000_000_000_000_000_000
        }
        guard attoseconds % 1_000_000_000 == 0 else {
            throw ProtobufBridgeError(
                message: "google.protobuf.Duration keeps whole nanoseconds; \(self) has a fraction of one")
        }
        let nanos = Int32(attoseconds / 1_000_000_000)
        try checkDuration(seconds, nanos)
        try message.setInt64(1, seconds)
        try message.setInt32(2, nanos)
    }
}

/// The seconds a `google.protobuf.Duration` may hold: ±10,000 years.
private let checkedDurationSeconds: ClosedRange<Int64> = -315_576_000_000...315_576_000_000

/// The spec's rules for a `google.protobuf.Duration`.
private func checkDuration(_ seconds: Int64, _ nanos: Int32) throws(ProtobufBridgeError) {
    guard checkedDurationSeconds.contains(seconds) else {
        throw ProtobufBridgeError(
            message: "google.protobuf.Duration seconds \(seconds) is outside ±315576000000 (10,000 years)")
    }
    guard (-999_999_999...999_999_999).contains(nanos) else {
        throw ProtobufBridgeError(message: "google.protobuf.Duration nanos \(nanos) is outside ±999999999")
    }
    guard seconds == 0 || nanos == 0 || (seconds < 0) == (nanos < 0) else {
        throw ProtobufBridgeError(
            message: "google.protobuf.Duration seconds \(seconds) and nanos \(nanos) have different signs")
    }
}

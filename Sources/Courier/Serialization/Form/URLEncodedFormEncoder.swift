import Foundation

/// Encodes any `Encodable` as `application/x-www-form-urlencoded` bytes or a query string.
///
/// Nested containers are written as `a[b]=` (or `a.b=`), arrays as `a[]=`, `a[0]=` or
/// repeated `a=`; nil values are left out; only RFC 3986 unreserved characters stay
/// unescaped; keys are sorted by default so one value always gives the same bytes.
/// The top-level value must be keyed (a struct or a dictionary).
///
/// A value type with no shared state: keep one in your configuration and reuse it.
public struct URLEncodedFormEncoder: Sendable {
    /// How dates are written.
    public enum DateEncodingStrategy: Sendable {
        /// `Date`'s own `Codable` form: seconds since 2001-01-01 (the default).
        case deferredToDate
        /// Seconds since 1970, e.g. `1700000000.5`.
        case secondsSince1970
        /// Whole milliseconds since 1970.
        case millisecondsSince1970
        /// ISO 8601 in UTC without fractional seconds, e.g. `2026-11-22T02:42:29Z`.
        case iso8601
        /// Your own formatting.
        case custom(@Sendable (Date) throws -> String)
    }

    /// How `Data` is written.
    public enum DataEncodingStrategy: Sendable {
        /// Base64 with padding (the default).
        case base64
        /// Your own formatting.
        case custom(@Sendable (Data) throws -> String)
    }

    /// How nested keys are written: `a[b]` or `a.b`.
    var nesting: URLEncodedForm.NestingStyle
    /// How array elements are written: `a[]`, `a[0]` or repeated `a`.
    var arrays: URLEncodedForm.ArrayStyle
    /// How Booleans are written: `true/false` or `1/0`.
    var bools: URLEncodedForm.BoolStyle
    /// How a space is escaped: `%20` or `+`.
    var spaces: URLEncodedForm.SpaceStyle
    /// How dates are written.
    var dates: DateEncodingStrategy
    /// How `Data` is written.
    var data: DataEncodingStrategy
    /// The order of keys: sorted, or as encoded.
    var keyOrdering: URLEncodedForm.KeyOrdering

    /// An encoder with the given styles.
    /// - Parameters:
    ///   - nesting: `a[b]` (default) or `a.b`.
    ///   - arrays: `a[]` (default), `a[0]` or repeated `a`.
    ///   - bools: `true/false` (default) or `1/0`.
    ///   - spaces: `%20` (default) or `+`.
    ///   - dates: how dates are written.
    ///   - data: how `Data` is written.
    ///   - keyOrdering: sorted (default) or encoding order.
    public init(
        nesting: URLEncodedForm.NestingStyle = .brackets,
        arrays: URLEncodedForm.ArrayStyle = .brackets,
        bools: URLEncodedForm.BoolStyle = .literal,
        spaces: URLEncodedForm.SpaceStyle = .percentEncoded,
        dates: DateEncodingStrategy = .deferredToDate,
        data: DataEncodingStrategy = .base64,
        keyOrdering: URLEncodedForm.KeyOrdering = .sorted
    ) {
        self.nesting = nesting
        self.arrays = arrays
        self.bools = bools
        self.spaces = spaces
        self.dates = dates
        self.data = data
        self.keyOrdering = keyOrdering
    }

    /// Encodes `value` as form bytes (`a=1&b=2`).
    /// - Parameter value: a struct or dictionary.
    /// - Returns: the bytes; empty when the value has no non-nil fields.
    /// - Throws: `CourierError.encoding` with the coding path.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        Data(try encodeBytes(value))
    }

    /// Encodes `value` as a query string without the leading `?`.
    /// - Parameter value: a struct or dictionary.
    /// - Returns: the percent-encoded query.
    /// - Throws: `CourierError.encoding` with the coding path.
    public func encodeQuery<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encodeBytes(value), as: UTF8.self)
    }

    func encodeBytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(128)
        try forEachField(of: value) { key, leaf in
            let text: String
            switch leaf {
            case .text(let string): text = string
            case .data(let bytes): text = try format(bytes)
            case .file(let file):
                throw CourierError(
                    .encoding, "a form cannot carry the file \(file.path); use the multipart serializer")
            }
            if !output.isEmpty { output.append(UInt8(ascii: "&")) }
            PercentEncoding.append(key, to: &output, spaceAsPlus: spaces == .plus)
            output.append(UInt8(ascii: "="))
            PercentEncoding.append(text, to: &output, spaceAsPlus: spaces == .plus)
        }
        return output
    }

    /// Calls `body` with each field's full key (unescaped, e.g. `user[tags][]`) and leaf value,
    /// in output order. The multipart serializer shares this.
    func forEachField<T: Encodable>(
        of value: T, _ body: (String, FormLeaf) throws -> Void
    ) throws {
        do {
            let root = try FormTreeEncoder(options: self, codingPath: []).box(value)
            switch root {
            case nil:
                return
            case .object(let object)?:
                try walk(object, prefix: nil, body)
            case .leaf?, .array?:
                throw CourierError(
                    .encoding, "form parameters must be keyed (a struct or a dictionary), not \(T.self)")
            }
        } catch {
            throw CourierError.encoding(error, type: T.self)
        }
    }

    private func walk(_ object: FormObject, prefix: String?, _ body: (String, FormLeaf) throws -> Void) throws {
        let entries = keyOrdering == .sorted ? object.entries.sorted { $0.key < $1.key } : object.entries
        for (name, value) in entries {
            try checkKey(name)
            let key: String
            if let prefix {
                key = nesting == .brackets ? prefix + "[" + name + "]" : prefix + "." + name
            } else {
                key = name
            }
            try walk(value, key: key, body)
        }
    }

    private func walk(_ value: FormValue, key: String, _ body: (String, FormLeaf) throws -> Void) throws {
        switch value {
        case .leaf(let leaf):
            try body(key, leaf)
        case .object(let object):
            try walk(object, prefix: key, body)
        case .array(let array):
            for (index, item) in array.items.enumerated() {
                let itemKey: String
                switch arrays {
                case .brackets: itemKey = key + "[]"
                case .indexed: itemKey = key + "[" + String(index) + "]"
                case .repeated: itemKey = key
                }
                try walk(item, key: itemKey, body)
            }
        }
    }

    private func checkKey(_ name: String) throws {
        let forbidden = name.utf8.contains { byte in
            byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]") || (nesting == .dots && byte == UInt8(ascii: "."))
        }
        if forbidden || name.isEmpty {
            throw CourierError(
                .encoding,
                "the key '\(name)' cannot be written unambiguously in a form (empty, or contains "
                    + (nesting == .dots ? "'[', ']' or '.')" : "'[' or ']')"))
        }
    }

    /// - Throws: `CourierError.encoding` for a date the strategy cannot write: not finite, past
    ///   64-bit milliseconds, or (ISO 8601) outside years 0001–9999. A date decoded from a
    ///   server can hold anything, and converting it must not trap.
    func format(_ date: Date) throws -> String {
        let seconds = date.timeIntervalSince1970
        func unwritable() -> CourierError {
            CourierError(.encoding, "the date \(seconds) s after 1970 cannot be written as \(dates)")
        }
        switch dates {
        case .deferredToDate:
            guard seconds.isFinite else { throw unwritable() }
            return String(date.timeIntervalSinceReferenceDate)
        case .secondsSince1970:
            guard seconds.isFinite else { throw unwritable() }
            return String(seconds)
        case .millisecondsSince1970:
            guard let milliseconds = Int64(exactly: (seconds * 1000).rounded()) else { throw unwritable() }
            return String(milliseconds)
        case .iso8601:
            guard HTTPDateFormat.representableSeconds.contains(seconds) else { throw unwritable() }
            return date.formatted(.iso8601)
        case .custom(let format): return try format(date)
        }
    }

    func format(_ bytes: Data) throws -> String {
        switch data {
        case .base64: return bytes.base64EncodedString()
        case .custom(let format): return try format(bytes)
        }
    }
}

import Foundation

extension JSONDecoderImpl {
    // MARK: Strings

    /// The string at a string token (also used for keys); the parser validated it.
    func string(at value: Int) -> String {
        let token = tokens[value]
        let start = bytes + Int(token.start)
        let length = Int(token.length)
        if token.flags & JSONToken.hasEscapes == 0 {
            // Not `String(decoding:as:)`: this initializer builds a small ASCII string (up to 15
            // bytes, most keys and values) without a separate validation pass.
            return String(unsafeUninitializedCapacity: length) { buffer in
                if length > 0 { buffer.baseAddress!.initialize(from: start, count: length) }
                return length
            }
        }
        return String(unsafeUninitializedCapacity: length) { buffer in
            JSONDecoderImpl.unescape(start, length, into: buffer.baseAddress!)
        }
    }

    /// Writes the unescaped UTF-8 of validated string content; returns the byte count. `out`
    /// has room for `length` bytes (unescaping never lengthens).
    static func unescape(_ source: UnsafePointer<UInt8>, _ length: Int, into out: UnsafeMutablePointer<UInt8>) -> Int {
        var i = 0
        var o = 0
        while i < length {
            // Eight bytes at a time up to the next backslash. Writing a whole word is safe:
            // o <= i, so o + 8 <= i + 8 <= length.
            if i + 8 <= length {
                let raw = UnsafeRawPointer(source + i).loadUnaligned(as: UInt64.self)
                let x = UInt64(littleEndian: raw) ^ 0x5C5C_5C5C_5C5C_5C5C
                let backslashes = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
                UnsafeMutableRawPointer(out + o).storeBytes(of: raw, as: UInt64.self)
                // The lowest flagged byte is exact (a borrow only misflags bytes above a hit).
                let run = backslashes == 0 ? 8 : backslashes.trailingZeroBitCount >> 3
                i += run
                o += run
                if run == 8 { continue }
            }
            let byte = source[i]
            if byte != UInt8(ascii: "\\") {
                out[o] = byte
                o += 1
                i += 1
                continue
            }
            let escape = source[i + 1]
            i += 2
            switch escape {
            case UInt8(ascii: "b"): out[o] = 0x08
            case UInt8(ascii: "f"): out[o] = 0x0C
            case UInt8(ascii: "n"): out[o] = 0x0A
            case UInt8(ascii: "r"): out[o] = 0x0D
            case UInt8(ascii: "t"): out[o] = 0x09
            case UInt8(ascii: "u"):
                var scalar = hex4(source + i)
                i += 4
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    let low = hex4(source + i + 2)
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                o += writeUTF8(scalar, out + o)
                continue
            default: out[o] = escape  // \" \\ \/
            }
            o += 1
        }
        return o
    }

    private static func hex4(_ p: UnsafePointer<UInt8>) -> UInt32 {
        var value: UInt32 = 0
        for k in 0..<4 { value = value << 4 | UInt32(JSONParser.hexValue(p[k]) ?? 0) }
        return value
    }

    private static func writeUTF8(_ scalar: UInt32, _ out: UnsafeMutablePointer<UInt8>) -> Int {
        switch scalar {
        case 0..<0x80:
            out[0] = UInt8(scalar)
            return 1
        case 0x80..<0x800:
            out[0] = UInt8(0xC0 | scalar >> 6)
            out[1] = UInt8(0x80 | scalar & 0x3F)
            return 2
        case 0x800..<0x10000:
            out[0] = UInt8(0xE0 | scalar >> 12)
            out[1] = UInt8(0x80 | scalar >> 6 & 0x3F)
            out[2] = UInt8(0x80 | scalar & 0x3F)
            return 3
        default:
            out[0] = UInt8(0xF0 | scalar >> 18)
            out[1] = UInt8(0x80 | scalar >> 12 & 0x3F)
            out[2] = UInt8(0x80 | scalar >> 6 & 0x3F)
            out[3] = UInt8(0x80 | scalar & 0x3F)
            return 4
        }
    }

    @inline(__always)
    func stringValue(at value: Int) throws(JSONValueFailure) -> String {
        let kind = tokens[value].kind
        guard kind == .string else { throw kind == .null ? .null : .mismatch }
        return string(at: value)
    }

    @inline(__always)
    func boolValue(at value: Int) throws(JSONValueFailure) -> Bool {
        switch tokens[value].kind {
        case .true: return true
        case .false: return false
        case .null: throw .null
        default: throw .mismatch
        }
    }

    /// Whether the raw bytes of a string token equal `other` (a key's UTF-8).
    @inline(__always)
    func stringEquals(at value: Int, _ other: UnsafeBufferPointer<UInt8>) -> Bool {
        let token = tokens[value]
        if token.flags & JSONToken.hasEscapes == 0 {
            guard Int(token.length) == other.count else { return false }
            return Self.bytesEqual(bytes + Int(token.start), other.baseAddress, other.count)
        }
        return string(at: value).utf8.elementsEqual(other)
    }

    /// `count` bytes at `a` and `b` are equal. Keys are short: up to 16 bytes are compared with
    /// two overlapping loads from each side (first and last 2, 4 or 8 bytes, all in bounds),
    /// without a call to `memcmp`.
    @inline(__always)
    static func bytesEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>?, _ count: Int) -> Bool {
        guard count > 0, let b else { return true }
        let x = UnsafeRawPointer(a)
        let y = UnsafeRawPointer(b)
        switch count {
        case 1:
            return a[0] == b[0]
        case 2..<4:
            return x.loadUnaligned(as: UInt16.self) == y.loadUnaligned(as: UInt16.self)
                && x.loadUnaligned(fromByteOffset: count - 2, as: UInt16.self)
                    == y.loadUnaligned(fromByteOffset: count - 2, as: UInt16.self)
        case 4..<8:
            return x.loadUnaligned(as: UInt32.self) == y.loadUnaligned(as: UInt32.self)
                && x.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                    == y.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        case 8...16:
            return x.loadUnaligned(as: UInt64.self) == y.loadUnaligned(as: UInt64.self)
                && x.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    == y.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        default:
            return memcmp(a, b, count) == 0
        }
    }

    // MARK: Numbers

    /// An integer, parsed as Foundation does: exact digits first, then through `Double`
    /// (integral values below 2^53 only), then exact decimal digits.
    @inline(__always)
    func integerValue<T: FixedWidthInteger>(at value: Int, as type: T.Type) throws(JSONValueFailure) -> T {
        let token = tokens[value]
        guard token.kind == .number else { throw token.kind == .null ? .null : .mismatch }
        if token.flags & JSONToken.isInteger != 0 && token.length <= 19 {
            let p = bytes + Int(token.start)
            let length = Int(token.length)
            let negative = p[0] == UInt8(ascii: "-")
            var i = negative ? 1 : 0
            var magnitude: UInt64 = 0
            while i < length {
                magnitude = magnitude &* 10 &+ UInt64(p[i] &- UInt8(ascii: "0"))
                i += 1
            }
            if !negative {
                if let result = T(exactly: magnitude) { return result }
            } else if magnitude == 0 {
                return 0
            } else if T.isSigned, magnitude <= UInt64(Int64.max), let result = T(exactly: -Int64(magnitude)) {
                return result
            }
        }
        return try slowIntegerValue(at: value, as: T.self)
    }

    private func slowIntegerValue<T: FixedWidthInteger>(at value: Int, as type: T.Type) throws(JSONValueFailure) -> T {
        let token = tokens[value]
        let buffer = UnsafeBufferPointer(start: bytes + Int(token.start), count: Int(token.length))
        if token.flags & JSONToken.isInteger != 0, let exact = JSONNumber.exactInteger(buffer, as: T.self) {
            return exact
        }
        let double = JSONNumber.parseDouble(buffer)
        guard let result = T(exactly: double) else { throw .notRepresentable }
        if double.magnitude < 9_007_199_254_740_992 { return result }
        guard let exact = JSONNumber.decimalInteger(buffer, as: T.self) else { throw .notRepresentable }
        return exact
    }

    /// A floating-point value; infinities and underflow to zero are rejected as Foundation does.
    @inline(__always)
    func doubleValue(at value: Int) throws(JSONValueFailure) -> Double {
        let token = tokens[value]
        guard token.kind == .number else { return try nonConformingValue(at: value, as: Double.self) }
        let buffer = UnsafeBufferPointer(start: bytes + Int(token.start), count: Int(token.length))
        if let fast = JSONNumber.fastDouble(buffer) { return fast }
        let double = JSONNumber.parseDouble(buffer)
        guard double.isFinite, double != 0 || JSONNumber.isTrueZero(buffer) else { throw .notRepresentable }
        return double
    }

    func floatValue(at value: Int) throws(JSONValueFailure) -> Float {
        let token = tokens[value]
        guard token.kind == .number else { return try nonConformingValue(at: value, as: Float.self) }
        let buffer = UnsafeBufferPointer(start: bytes + Int(token.start), count: Int(token.length))
        if let fast = JSONNumber.fastFloat(buffer) { return fast }
        let float = Float(String(decoding: buffer, as: UTF8.self)) ?? .infinity
        guard float.isFinite, float != 0 || JSONNumber.isTrueZero(buffer) else { throw .notRepresentable }
        return float
    }

    private func nonConformingValue<T: BinaryFloatingPoint>(at value: Int, as type: T.Type) throws(JSONValueFailure)
        -> T
    {
        let token = tokens[value]
        if token.kind == .null { throw .null }
        if token.kind == .string, token.flags & JSONToken.hasEscapes == 0,
            case .convertFromString(let positiveInfinity, let negativeInfinity, let nan) =
                options.nonConformingFloatDecodingStrategy
        {
            let text = string(at: value)
            if text == positiveInfinity { return .infinity }
            if text == negativeInfinity { return -.infinity }
            if text == nan { return .nan }
        }
        throw .mismatch
    }
}

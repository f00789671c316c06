/// Number conversions over the validated bytes of a JSON number.
enum JSONNumber {
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]
    private static let floatPowersOfTen: [Float] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10]

    /// Decimal significand and exponent of a number with at most 19 significant digits.
    struct Parts {
        var negative = false
        var significand: UInt64 = 0
        var exponent = 0
        var digits = 0
        var truncated = false
    }

    @inline(__always)
    static func parts(_ buffer: UnsafeBufferPointer<UInt8>) -> Parts {
        var parts = Parts()
        var i = 0
        let count = buffer.count
        if buffer[0] == UInt8(ascii: "-") {
            parts.negative = true
            i = 1
        }
        while i < count {
            let digit = buffer[i] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            accumulate(&parts, digit, fraction: false)
            i += 1
        }
        if i < count && buffer[i] == UInt8(ascii: ".") {
            i += 1
            while i < count {
                let digit = buffer[i] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                accumulate(&parts, digit, fraction: true)
                i += 1
            }
        }
        if i < count {  // exponent
            i += 1
            var negativeExponent = false
            if buffer[i] == UInt8(ascii: "-") {
                negativeExponent = true
                i += 1
            } else if buffer[i] == UInt8(ascii: "+") {
                i += 1
            }
            var exponent = 0
            while i < count {
                if exponent < 100_000 { exponent = exponent * 10 + Int(buffer[i] &- UInt8(ascii: "0")) }
                i += 1
            }
            parts.exponent += negativeExponent ? -exponent : exponent
        }
        return parts
    }

    @inline(__always)
    private static func accumulate(_ parts: inout Parts, _ digit: UInt8, fraction: Bool) {
        if parts.digits == 0 && digit == 0 {
            if fraction { parts.exponent -= 1 }
            return
        }
        if parts.digits < 19 {
            parts.significand = parts.significand &* 10 &+ UInt64(digit)
            parts.digits += 1
            if fraction { parts.exponent -= 1 }
        } else {
            if digit != 0 { parts.truncated = true }
            if !fraction { parts.exponent += 1 }
        }
    }

    /// Clinger's fast path: exact when the significand and the power of ten are exact doubles.
    @inline(__always)
    static func fastDouble(_ buffer: UnsafeBufferPointer<UInt8>) -> Double? {
        let p = parts(buffer)
        guard !p.truncated, p.significand <= 1 << 53, p.exponent >= -22, p.exponent <= 22 else { return nil }
        var value = Double(p.significand)
        if p.exponent < 0 { value /= powersOfTen[-p.exponent] } else { value *= powersOfTen[p.exponent] }
        return p.negative ? -value : value
    }

    @inline(__always)
    static func fastFloat(_ buffer: UnsafeBufferPointer<UInt8>) -> Float? {
        let p = parts(buffer)
        guard !p.truncated, p.significand <= 1 << 24, p.exponent >= -10, p.exponent <= 10 else { return nil }
        var value = Float(p.significand)
        if p.exponent < 0 { value /= floatPowersOfTen[-p.exponent] } else { value *= floatPowersOfTen[p.exponent] }
        return p.negative ? -value : value
    }

    /// Correctly rounded conversion (the C library's `strtod`), `±infinity` on overflow.
    static func parseDouble(_ buffer: UnsafeBufferPointer<UInt8>) -> Double {
        if let fast = fastDouble(buffer) { return fast }
        return Double(String(decoding: buffer, as: UTF8.self)) ?? .infinity
    }

    /// Whether a number that converted to zero is really zero (no non-zero significant digit).
    static func isTrueZero(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in buffer {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return true }
            if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return false }
        }
        return true
    }

    /// An integer written without fraction or exponent, or `nil` if it does not fit.
    static func exactInteger<T: FixedWidthInteger>(_ buffer: UnsafeBufferPointer<UInt8>, as type: T.Type) -> T? {
        let negative = buffer[0] == UInt8(ascii: "-")
        var result: T = 0
        for byte in buffer[(negative ? 1 : 0)...] {
            let digit = T(byte &- UInt8(ascii: "0"))
            let (shifted, overflow1) = result.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            result = next
        }
        return result
    }

    /// Foundation's last resort for integers (via `Decimal`): the significant digits, which must
    /// fit 64 bits, scaled by the exponent with truncating division. As in `Decimal`, trailing
    /// zeros are not part of the significand (`…3.000000` and `1000…0e-2` fit).
    static func decimalInteger<T: FixedWidthInteger>(_ buffer: UnsafeBufferPointer<UInt8>, as type: T.Type) -> T? {
        let negative = buffer[0] == UInt8(ascii: "-")
        let digitsStart = negative ? 1 : 0
        var digitsEnd = buffer.count
        var exponent = 0
        if let e = buffer.firstIndex(where: { $0 | 0x20 == UInt8(ascii: "e") }) {
            guard let value = Int(String(decoding: buffer[(e + 1)...], as: UTF8.self)), value.magnitude < 1000 else {
                return nil
            }
            exponent = value
            digitsEnd = e
        }
        let point = buffer[digitsStart..<digitsEnd].firstIndex(of: UInt8(ascii: ".")) ?? digitsEnd
        var last = digitsEnd
        while last > digitsStart && (buffer[last - 1] == UInt8(ascii: "0") || buffer[last - 1] == UInt8(ascii: ".")) {
            last -= 1
        }
        var significand: UInt64 = 0
        for byte in buffer[digitsStart..<last] where byte != UInt8(ascii: ".") {
            let (a, o1) = significand.multipliedReportingOverflow(by: 10)
            let (b, o2) = a.addingReportingOverflow(UInt64(byte &- UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            significand = b
        }
        // Digits kept after the point scale down; zeros dropped before it scale up.
        exponent += last > point ? point + 1 - last : point - last
        while exponent < 0 {
            significand /= 10
            exponent += 1
        }
        while exponent > 0 {
            let (a, overflow) = significand.multipliedReportingOverflow(by: 10)
            if overflow { return nil }
            significand = a
            exponent -= 1
        }
        if negative {
            guard T.isSigned, significand <= UInt64(Int64.max) else { return nil }
            return T(exactly: -Int64(significand))
        }
        return T(exactly: significand)
    }
}

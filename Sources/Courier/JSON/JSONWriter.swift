/// A growable byte buffer (owned by one `JSONEncoderImpl`, never copied) with the JSON scalar writers, formatted byte for byte as
/// Foundation's `JSONEncoder` on Linux formats them.
struct JSONWriter {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int
    let escapesSlashes: Bool
    let pretty: Bool

    init(capacity: Int, escapesSlashes: Bool, pretty: Bool) {
        self.capacity = max(capacity, 64)
        self.base = .allocate(capacity: self.capacity)
        self.escapesSlashes = escapesSlashes
        self.pretty = pretty
    }

    /// Frees the buffer; the owner calls it exactly once.
    func deallocate() { base.deallocate() }

    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(count + extra) }
    }

    private mutating func grow(_ needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func write(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).update(from: source.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        count += bytes.count
    }

    mutating func write(ascii text: StaticString) {
        write(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Copies bytes already in the buffer (used when sorting members in place).
    mutating func copy(from source: UnsafePointer<UInt8>, count length: Int) {
        reserve(length)
        (base + count).update(from: source, count: length)
        count += length
    }

    /// Drops everything after `offset`.
    mutating func truncate(to offset: Int) { count = offset }

    /// Two spaces per level, as Foundation's pretty printing.
    mutating func newlineAndIndent(_ level: Int) {
        reserve(1 + 2 * level)
        base[count] = 0x0A
        count += 1
        for _ in 0..<(2 * level) {
            base[count] = 0x20
            count += 1
        }
    }

    // MARK: Scalars

    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { writeEscaped($0) }
    }

    /// Writes text as it is (a number's digits).
    mutating func write(raw text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes a quoted string: `"`, `\` and control characters escaped (`\b \f \n \r \t`,
    /// others as `\u00xx`), `/` as `\/` unless `.withoutEscapingSlashes`.
    mutating func writeEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        let n = utf8.count
        reserve(n + 2)
        base[count] = UInt8(ascii: "\"")
        count += 1
        guard let source = utf8.baseAddress, n > 0 else {
            base[count] = UInt8(ascii: "\"")
            count += 1
            return
        }
        // Most strings need no escape: find the first byte that does, copy the rest at once.
        var i = 0
        while i + 8 <= n {
            let mask = escapeMask(UInt64(littleEndian: UnsafeRawPointer(source + i).loadUnaligned(as: UInt64.self)))
            if mask != 0 {
                i += mask.trailingZeroBitCount >> 3
                break
            }
            i += 8
        }
        while i < n && !needsEscape(source[i]) { i += 1 }
        (base + count).update(from: source, count: i)
        count += i
        if i < n { writeEscapedTail(source + i, n - i) }
        write(UInt8(ascii: "\""))
    }

    @inline(__always)
    private func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
            || (byte == UInt8(ascii: "/") && escapesSlashes)
    }

    /// The part of a string from its first byte that needs an escape.
    private mutating func writeEscapedTail(_ source: UnsafePointer<UInt8>, _ n: Int) {
        var runStart = 0
        var i = 0
        while i < n {
            let byte = source[i]
            if !needsEscape(byte) {
                i += 1
                continue
            }
            if i > runStart { copy(from: source + runStart, count: i - runStart) }
            switch byte {
            case UInt8(ascii: "\""): write(ascii: "\\\"")
            case UInt8(ascii: "\\"): write(ascii: "\\\\")
            case UInt8(ascii: "/"): write(ascii: "\\/")
            case 0x08: write(ascii: "\\b")
            case 0x0C: write(ascii: "\\f")
            case 0x0A: write(ascii: "\\n")
            case 0x0D: write(ascii: "\\r")
            case 0x09: write(ascii: "\\t")
            default:
                let hex: StaticString = "0123456789abcdef"
                write(ascii: "\\u00")
                write(hex.utf8Start[Int(byte >> 4)])
                write(hex.utf8Start[Int(byte & 0xF)])
            }
            i += 1
            runStart = i
        }
        if n > runStart { copy(from: source + runStart, count: n - runStart) }
    }

    /// High bit set in each byte that may need escaping (`"`, `\`, `/`, control); exact for
    /// the lowest flagged byte, a superset above it.
    @inline(__always)
    private func escapeMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let slash = word ^ (ones &* 0x2F)
        var mask = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
        if escapesSlashes { mask |= (slash &- ones) & ~slash }
        return mask & highs
    }

    mutating func write<T: FixedWidthInteger>(integer value: T) {
        reserve(40)
        var magnitude = value.magnitude
        if value < 0 {
            base[count] = UInt8(ascii: "-")
            count += 1
        }
        // Digits backwards into a scratch area at the end, then forwards.
        var digits: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { scratch in
            var position = scratch.count
            repeat {
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                position -= 1
                scratch[position] = UInt8(truncatingIfNeeded: remainder) + UInt8(ascii: "0")
                magnitude = quotient
            } while magnitude != 0
            let length = scratch.count - position
            (base + count).update(
                from: scratch.baseAddress!.assumingMemoryBound(to: UInt8.self) + position, count: length)
            count += length
        }
    }

    /// Writes a finite floating-point value as Swift's `description`, minus a trailing `.0`.
    mutating func write<T: BinaryFloatingPoint & CustomStringConvertible>(float value: T) {
        var text = value.description
        text.withUTF8 { utf8 in
            var length = utf8.count
            if length >= 2 && utf8[length - 2] == UInt8(ascii: ".") && utf8[length - 1] == UInt8(ascii: "0") {
                length -= 2
            }
            write(UnsafeRawBufferPointer(start: utf8.baseAddress, count: length))
        }
    }
}

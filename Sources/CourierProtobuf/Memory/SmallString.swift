/// Swift's small-string form, read and written directly for the strings of up to 15 UTF-8 bytes
/// that make up most protobuf fields (names, tags, keys, enum-like values).
///
/// On 64-bit platforms a `String` of at most 15 UTF-8 bytes is stored inline in its two words:
/// the bytes in order (little-endian), and in the top byte of the second word a discriminator
/// (immortal, small, ASCII flags) and the count. Building one from bytes that are already
/// checked (ASCII, no NUL) and copying one out into the C message skips the standard library's
/// generic paths (`strlen`, UTF-8 validation, contiguous-storage closures), which were a fifth
/// of a decode + encode of a typical message.
///
/// That layout is the standard library's (`_StringObject`), not a public API: ``isAvailable``
/// checks it once against strings the standard library made itself, and when anything differs
/// every caller takes the ordinary path instead.
enum SmallString {
    /// Whether small strings are laid out as this type assumes (checked once per process).
    static let isAvailable: Bool = layoutMatches()

    /// Discriminator flags in the top byte: immortal (0x80), small (0x20); ASCII is 0x40.
    private static let smallFlags: UInt64 = 0xA0
    private static let asciiFlag: UInt64 = 0x40
    private static let highBits: UInt64 = 0x8080_8080_8080_8080
    private static let lowBits: UInt64 = 0x0101_0101_0101_0101

    /// The low `bytes` bytes of a word set (0...8 bytes, clamped).
    @inline(__always)
    private static func mask(_ bytes: Int) -> UInt64 {
        if bytes >= 8 { return ~0 }
        if bytes <= 0 { return 0 }
        return (1 &<< UInt64(bytes &* 8)) &- 1
    }

    /// Whether one of the first `count` bytes of the pair is zero.
    @inline(__always)
    private static func hasNUL(_ low: UInt64, _ high: UInt64, count: Int) -> Bool {
        // Bytes past `count` become 0x01 so that only the string's own bytes can be zero.
        let a = low | (~mask(count) & lowBits)
        let b = high | (~mask(count &- 8) & lowBits)
        return ((a &- lowBits) & ~a & highBits) | ((b &- lowBits) & ~b & highBits) != 0
    }

    /// The string of the `count` (0...15) bytes at `bytes` when they are all ASCII and none is
    /// NUL, else nil. Reads whole words: 8 bytes at `bytes` must be readable when `count` is 1...8,
    /// 16 when it is 9...15 (the decode arena rounds every allocation up to 8 bytes, and a
    /// string's has room for its NUL).
    @inline(__always)
    static func ascii(_ bytes: UnsafeRawPointer, count: Int) -> String? {
        guard count > 0 else { return "" }
        let low = bytes.loadUnaligned(as: UInt64.self) & mask(count)
        let high = count > 8 ? bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self) & mask(count &- 8) : 0
        guard (low | high) & highBits == 0, !hasNUL(low, high, count: count) else { return nil }
        return make(low, high | (smallFlags | asciiFlag | UInt64(count)) &<< 56)
    }

    /// The string whose two words are `low` and `high`, taken over without reference counting
    /// (`unsafeBitCast` would retain the result, a call per string for nothing: small strings
    /// are immortal).
    @inline(__always)
    private static func make(_ low: UInt64, _ high: UInt64) -> String {
        var words = (low, high)
        return withUnsafeMutablePointer(to: &words) { $0.withMemoryRebound(to: String.self, capacity: 1) { $0.move() } }
    }

    /// ``utf8(_:)`` of the string stored at `element` (an element of a `[String]`), read in
    /// place: no copy of the string, so no reference counting.
    @inline(__always)
    static func utf8(at element: UnsafePointer<String>) -> (low: UInt64, high: UInt64, count: Int)? {
        let (low, high) = UnsafeRawPointer(element).load(as: (UInt64, UInt64).self)
        return utf8Words(low, high)
    }

    /// The UTF-8 bytes of `string` as two words (unused bytes zero) and their count, when it is
    /// a small string; nil for a string stored elsewhere.
    @inline(__always)
    static func utf8(_ string: String) -> (low: UInt64, high: UInt64, count: Int)? {
        let (low, high) = unsafeBitCast(string, to: (UInt64, UInt64).self)
        return utf8Words(low, high)
    }

    @inline(__always)
    private static func utf8Words(_ low: UInt64, _ high: UInt64) -> (low: UInt64, high: UInt64, count: Int)? {
        let discriminator = high &>> 56
        guard discriminator & 0xB0 == smallFlags else { return nil }  // small, not foreign
        let count = Int(discriminator & 0x0F)
        return (low & mask(count), high & mask(count &- 8), count)
    }

    /// A NUL-terminated copy of a small string's bytes, written by `allocate(byteCount)`
    /// (8 or 16 bytes); nil when the string holds a NUL byte.
    @inline(__always)
    static func cString(
        _ small: (low: UInt64, high: UInt64, count: Int), _ allocate: (Int) -> UnsafeMutableRawPointer
    ) -> UnsafeMutableRawPointer? {
        if hasNUL(small.low, small.high, count: small.count) { return nil }
        // The byte after the last is zero in the masked words: the terminator comes with them.
        if small.count < 8 {
            let memory = allocate(8)
            memory.storeBytes(of: small.low, as: UInt64.self)
            return memory
        }
        let memory = allocate(16)
        memory.storeBytes(of: small.low, as: UInt64.self)
        memory.storeBytes(of: small.high, toByteOffset: 8, as: UInt64.self)
        return memory
    }

    /// Checks the assumed layout against small strings the standard library makes.
    private static func layoutMatches() -> Bool {
        guard MemoryLayout<String>.size == 16, MemoryLayout<Int>.size == 8, UInt16(1).littleEndian == 1 else {
            return false
        }
        let samples = [
            "", "a", "ok", "hot", "iced", "coffee", "size-1", "Lungo 1", "Espresso", "Ristretto 2",
            "abcdefghijklmno", "d\u{E9}j\u{E0} vu", "caf\u{E9}",
        ]
        for sample in samples {
            // The standard library's own string of these bytes (not a literal: made at run time).
            let bytes = Array(sample.utf8)
            let made = String(decoding: bytes, as: UTF8.self)
            guard let small = utf8(made), small.count == bytes.count else { return false }
            var words = (small.low, small.high)
            let copied = withUnsafeBytes(of: &words) { Array($0.prefix(bytes.count)) }
            guard copied == bytes else { return false }
            // Padded as the decode arena pads its strings: a NUL, then zeros to 16 bytes.
            let padded = bytes + [UInt8](repeating: 0, count: 16 - bytes.count)
            let rebuilt = padded.withUnsafeBytes { ascii($0.baseAddress!, count: bytes.count) }
            if bytes.allSatisfy({ $0 < 0x80 }) {
                guard let rebuilt, rebuilt == made, rebuilt.utf8.count == bytes.count,
                    unsafeBitCast(rebuilt, to: (UInt64, UInt64).self) == unsafeBitCast(made, to: (UInt64, UInt64).self)
                else { return false }
            } else if rebuilt != nil {
                return false
            }
        }
        // A string too long to be small is not taken for one.
        return utf8(String(decoding: Array("abcdefghijklmnop".utf8), as: UTF8.self)) == nil
    }
}

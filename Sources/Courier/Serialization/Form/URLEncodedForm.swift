import Foundation

/// Options shared by ``URLEncodedFormEncoder`` and ``URLEncodedFormDecoder``.
public enum URLEncodedForm {
    /// How a nested container's keys are written.
    public enum NestingStyle: Sendable, Hashable {
        /// `user[name]=x` (the default; Rails, PHP).
        case brackets
        /// `user.name=x` (Spring). Key names may not contain `.` then.
        case dots
    }

    /// How array elements are written.
    ///
    /// Arrays of containers and arrays of arrays round-trip only with `.indexed`; the decoder
    /// reads `a[][x]=1&a[][y]=2` the way Rails does (a repeated key starts a new element).
    public enum ArrayStyle: Sendable, Hashable {
        /// `tags[]=a&tags[]=b` (the default).
        case brackets
        /// `tags[0]=a&tags[1]=b`.
        case indexed
        /// `tags=a&tags=b`.
        case repeated
    }

    /// How Booleans are written. The decoder reads both.
    public enum BoolStyle: Sendable, Hashable {
        /// `true` / `false` (the default).
        case literal
        /// `1` / `0`.
        case numeric
    }

    /// How a space is escaped. The decoder reads both.
    public enum SpaceStyle: Sendable, Hashable {
        /// `%20` (the default): means a space in both query strings and form bodies.
        case percentEncoded
        /// `+`, as HTML forms send.
        case plus
    }

    /// The order of keys within a keyed container.
    public enum KeyOrdering: Sendable, Hashable {
        /// Sorted by key (the default): the same value always gives the same bytes, even for
        /// dictionaries, whose order changes from run to run.
        case sorted
        /// The order `encode(to:)` wrote them (declaration order for synthesized `Codable`).
        case encodingOrder
    }
}

/// Percent-escaping per RFC 3986: only unreserved characters (`A–Z a–z 0–9 - . _ ~`) stay as they are.
enum PercentEncoding {
    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }

    @inline(__always)
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Appends `text` to `output`, escaped.
    static func append(_ text: String, to output: inout [UInt8], spaceAsPlus: Bool) {
        var text = text
        text.withUTF8 { bytes in
            for byte in bytes {
                if isUnreserved(byte) {
                    output.append(byte)
                } else if byte == 0x20 && spaceAsPlus {
                    output.append(UInt8(ascii: "+"))
                } else {
                    output.append(UInt8(ascii: "%"))
                    output.append(hexDigit(byte >> 4))
                    output.append(hexDigit(byte & 0x0F))
                }
            }
        }
    }

    /// Decodes `%XX` escapes (and `+` as a space when asked). A `%` not followed by two hex
    /// digits is kept as it is, as browsers do.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, plusAsSpace: Bool) -> String {
        var needsWork = false
        for byte in bytes where byte == UInt8(ascii: "%") || (plusAsSpace && byte == UInt8(ascii: "+")) {
            needsWork = true
            break
        }
        if !needsWork { return String(decoding: bytes, as: UTF8.self) }
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                let low = hexValue(bytes[index + 2])
            {
                result.append(high << 4 | low)
                index += 3
            } else if byte == UInt8(ascii: "+") && plusAsSpace {
                result.append(0x20)
                index += 1
            } else {
                result.append(byte)
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

import Foundation

/// Finds the byte ranges of a JSON object's top-level members without building values.
///
/// Validates structure enough to find boundaries (strings, nesting, literals); the values
/// themselves are checked later by whichever decoder reads them.
enum JSONObjectScanner {
    struct Malformed: Error, Sendable, CustomStringConvertible {
        let offset: Int
        let reason: String
        var description: String { "malformed JSON at byte \(offset): \(reason)" }
    }

    /// Member name → range of its value, as offsets from the start of `data`.
    static func topLevelMembers(of data: Data) throws -> [String: Range<Int>] {
        try data.withUnsafeBytes { raw in
            var scanner = Scanner(bytes: raw.bindMemory(to: UInt8.self))
            return try scanner.members()
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func fail(_ reason: String) -> Malformed { Malformed(offset: index, reason: reason) }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func expect(_ byte: UInt8) throws {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else {
                throw fail("expected '\(Character(Unicode.Scalar(byte)))'")
            }
            index += 1
        }

        mutating func members() throws -> [String: Range<Int>] {
            // A UTF-8 byte order mark, as the JSON decoder skips it (`JSONParser`).
            if bytes.starts(with: utf8ByteOrderMark) { index = utf8ByteOrderMark.count }
            try expect(UInt8(ascii: "{"))
            var result: [String: Range<Int>] = [:]
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    skipWhitespace()
                    let keyStart = index
                    try skipString()
                    let key = try decodeKey(keyStart..<index)
                    try expect(UInt8(ascii: ":"))
                    skipWhitespace()
                    let valueStart = index
                    try skipValue(depth: 0)
                    result[key] = valueStart..<index
                    skipWhitespace()
                    guard index < bytes.count else { throw fail("unterminated object") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                    } else if bytes[index] == UInt8(ascii: "}") {
                        index += 1
                        break
                    } else {
                        throw fail("expected ',' or '}'")
                    }
                }
            }
            skipWhitespace()
            guard index == bytes.count else { throw fail("trailing bytes after the object") }
            return result
        }

        /// A key's text; escapes are rare in keys, so only then is a decoder used.
        func decodeKey(_ range: Range<Int>) throws -> String {
            let inner = UnsafeBufferPointer(rebasing: bytes[(range.lowerBound + 1)..<(range.upperBound - 1)])
            guard inner.contains(UInt8(ascii: "\\")) else { return String(decoding: inner, as: UTF8.self) }
            return try JSONDecoder().decode(String.self, from: Data(UnsafeBufferPointer(rebasing: bytes[range])))
        }

        mutating func skipString() throws {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string") }
            index += 1
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    return
                case UInt8(ascii: "\\"): index += 2
                default: index += 1
                }
            }
            throw fail("unterminated string")
        }

        mutating func skipValue(depth: Int) throws {
            guard depth < 512 else { throw fail("nested too deeply") }
            skipWhitespace()
            guard index < bytes.count else { throw fail("expected a value") }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                try skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = bytes[index] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                let isObject = close == UInt8(ascii: "}")
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == close {
                    index += 1
                    return
                }
                while true {
                    if isObject {
                        skipWhitespace()
                        try skipString()
                        try expect(UInt8(ascii: ":"))
                    }
                    try skipValue(depth: depth + 1)
                    skipWhitespace()
                    guard index < bytes.count else { throw fail("unterminated container") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                    } else if bytes[index] == close {
                        index += 1
                        return
                    } else {
                        throw fail("expected ',' or a closing bracket")
                    }
                }
            default:
                // number, true, false, null: a run of literal characters.
                let start = index
                while index < bytes.count {
                    let byte = bytes[index]
                    let isLiteral =
                        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                        || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
                        || byte == UInt8(ascii: "E")
                    guard isLiteral else { break }
                    index += 1
                }
                guard index > start else { throw fail("unexpected character") }
                // A run that starts with a letter is one of the three literals, whole: `tru` or
                // `nul` read as written made a code (and the call's error an `.apiError`) of a
                // body that is not JSON. Numbers stay for their reader to check.
                let first = bytes[start]
                if first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z") {
                    let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    guard Self.literals.contains(where: { run.elementsEqual($0) }) else {
                        index = start
                        throw fail("not a JSON literal (true, false or null)")
                    }
                }
            }
        }

        /// The JSON literals.
        static let literals: [[UInt8]] = [Array("true".utf8), Array("false".utf8), Array("null".utf8)]
    }
}

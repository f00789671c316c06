/// A strict RFC 8259 parser that builds the token tape in one pass over the bytes.
///
/// It validates everything up front — grammar, escapes, surrogate pairs, UTF-8, control
/// characters, nesting depth — so decoding later only converts values it is asked for.
struct JSONParser {
    /// Foundation's limit: 512 nested arrays or objects parse, 513 do not.
    static let maximumDepth = 512

    private let bytes: UnsafePointer<UInt8>
    private let count: Int
    private var position = 0
    private var tokens: UnsafeMutablePointer<JSONToken>
    private var tokenCount = 0
    private var tokenCapacity: Int

    private init(bytes: UnsafePointer<UInt8>, count: Int, storage: JSONTokenStorage) {
        self.bytes = bytes
        self.count = count
        let needed = max(16, count / 6)
        if let pointer = storage.pointer, storage.capacity >= needed {
            self.tokens = pointer
            self.tokenCapacity = storage.capacity
        } else {
            storage.pointer?.deallocate()
            self.tokens = .allocate(capacity: needed)
            self.tokenCapacity = needed
        }
    }

    /// Parses a whole document into `storage` (reusing or replacing its buffer) and returns
    /// the number of tokens, including a trailing `null` sentinel. A UTF-8 byte order mark
    /// is skipped; trailing bytes other than whitespace are an error.
    static func parse(bytes: UnsafePointer<UInt8>, count: Int, into storage: inout JSONTokenStorage)
        throws(JSONSyntaxError) -> Int
    {
        var parser = JSONParser(bytes: bytes, count: count, storage: storage)
        defer { storage = JSONTokenStorage(pointer: parser.tokens, capacity: parser.tokenCapacity) }
        if count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { parser.position = 3 }
        try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.position != count { throw parser.fail("Unexpected data after the top-level value") }
        _ = parser.append(.null, flags: 0, start: 0, length: 0)
        return parser.tokenCount
    }

    @inline(__always)
    private mutating func append(_ kind: JSONTokenKind, flags: UInt8, start: Int, length: Int) -> Int {
        if tokenCount == tokenCapacity { grow() }
        let index = tokenCount
        (tokens + index).initialize(
            to: JSONToken(
                kind: kind, flags: flags, start: UInt32(truncatingIfNeeded: start),
                length: UInt32(truncatingIfNeeded: length), next: UInt32(truncatingIfNeeded: index + 1)))
        tokenCount = index + 1
        return index
    }

    @inline(__always)
    private func finishContainer(_ index: Int, elements: Int) {
        tokens[index].length = UInt32(truncatingIfNeeded: elements)
        tokens[index].next = UInt32(truncatingIfNeeded: tokenCount)
    }

    private mutating func grow() {
        let newCapacity = tokenCapacity * 2
        let newTokens = UnsafeMutablePointer<JSONToken>.allocate(capacity: newCapacity)
        newTokens.moveInitialize(from: tokens, count: tokenCount)
        tokens.deallocate()
        tokens = newTokens
        tokenCapacity = newCapacity
    }

    private func fail(_ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(reason: reason, offset: position)
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < count {
            let byte = bytes[position]
            // Everything above the space is not whitespace: one comparison for compact JSON.
            guard byte <= 0x20, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position += 1
        }
    }

    /// Parses any value; `depth` is the number of arrays and objects around it.
    ///
    /// Inlined into the member loops of arrays and objects, with strings (the most frequent
    /// values, and every key) parsed inline too.
    @inline(__always)
    private mutating func parseValue(depth: Int) throws(JSONSyntaxError) {
        if position >= count || bytes[position] <= 0x20 { skipWhitespace() }
        guard position < count else { throw fail("Unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "\""): try parseString()
        case UInt8(ascii: "{"): try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): try parseArray(depth: depth + 1)
        default: try parseScalar()
        }
    }

    /// Numbers and literals (strings are parsed inline by `parseValue`).
    private mutating func parseScalar() throws(JSONSyntaxError) {
        switch bytes[position] {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber()
        case UInt8(ascii: "t"): try parseLiteral(0x6575_7274, .true)  // "true"
        case UInt8(ascii: "f"):
            guard position + 5 <= count, bytes[position + 4] == UInt8(ascii: "e") else {
                throw fail("Invalid literal")
            }
            try parseLiteral(0x736C_6166, .false, length: 5)  // "fals" + "e"
        case UInt8(ascii: "n"): try parseLiteral(0x6C6C_756E, .null)  // "null"
        default: throw fail("Unexpected character")
        }
    }

    @inline(__always)
    private mutating func parseLiteral(_ word: UInt32, _ kind: JSONTokenKind, length: Int = 4)
        throws(JSONSyntaxError)
    {
        guard position + length <= count,
            UnsafeRawPointer(bytes + position).loadUnaligned(as: UInt32.self) == UInt32(littleEndian: word)
        else { throw fail("Invalid literal") }
        _ = append(kind, flags: 0, start: position, length: length)
        position += length
    }

    private mutating func parseObject(depth: Int) throws(JSONSyntaxError) {
        guard depth <= Self.maximumDepth else { throw fail("Too many nested arrays or objects") }
        let index = append(.object, flags: 0, start: position, length: 0)
        position += 1
        skipWhitespace()
        var members = 0
        if position < count && bytes[position] == UInt8(ascii: "}") {
            position += 1
            finishContainer(index, elements: 0)
            return
        }
        while true {
            if position >= count || bytes[position] != UInt8(ascii: "\"") {
                skipWhitespace()
                guard position < count, bytes[position] == UInt8(ascii: "\"") else {
                    throw fail("Expected a string key")
                }
            }
            try parseString()
            // Compact JSON first: the expected byte, then whitespace only if it is not there.
            if position >= count || bytes[position] != UInt8(ascii: ":") {
                skipWhitespace()
                guard position < count, bytes[position] == UInt8(ascii: ":") else { throw fail("Expected ':'") }
            }
            position += 1
            try parseValue(depth: depth)
            members += 1
            if position >= count || bytes[position] <= 0x20 { skipWhitespace() }
            guard position < count else { throw fail("Unexpected end of input in an object") }
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: ",") { continue }
            if byte == UInt8(ascii: "}") { break }
            position -= 1
            throw fail("Expected ',' or '}'")
        }
        finishContainer(index, elements: members)
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) {
        guard depth <= Self.maximumDepth else { throw fail("Too many nested arrays or objects") }
        let index = append(.array, flags: 0, start: position, length: 0)
        position += 1
        skipWhitespace()
        var elements = 0
        if position < count && bytes[position] == UInt8(ascii: "]") {
            position += 1
            finishContainer(index, elements: 0)
            return
        }
        while true {
            try parseValue(depth: depth)
            elements += 1
            if position >= count || bytes[position] <= 0x20 { skipWhitespace() }
            guard position < count else { throw fail("Unexpected end of input in an array") }
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: ",") { continue }
            if byte == UInt8(ascii: "]") { break }
            position -= 1
            throw fail("Expected ',' or ']'")
        }
        finishContainer(index, elements: elements)
    }

    @inline(__always)
    private mutating func parseNumber() throws(JSONSyntaxError) {
        let start = position
        var integer = true
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < count else { throw fail("Invalid number") }
        let first = bytes[position]
        if first == UInt8(ascii: "0") {
            position += 1
        } else if first >= UInt8(ascii: "1") && first <= UInt8(ascii: "9") {
            position += 1
            skipDigits()
        } else {
            throw fail("Invalid number")
        }
        if position < count && bytes[position] == UInt8(ascii: ".") {
            integer = false
            position += 1
            guard position < count, isDigit(bytes[position]) else { throw fail("Invalid number fraction") }
            skipDigits()
        }
        if position < count && (bytes[position] | 0x20) == UInt8(ascii: "e") {
            integer = false
            position += 1
            if position < count && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")) {
                position += 1
            }
            guard position < count, isDigit(bytes[position]) else { throw fail("Invalid number exponent") }
            skipDigits()
        }
        _ = append(
            .number, flags: integer ? JSONToken.isInteger : 0, start: start, length: position - start)
    }

    @inline(__always) private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    @inline(__always)
    private mutating func skipDigits() {
        while position < count && isDigit(bytes[position]) { position += 1 }
    }

    /// Parses a string starting at its opening quote.
    @inline(__always)
    private mutating func parseString() throws(JSONSyntaxError) {
        let start = position + 1
        var i = start
        var flags: UInt8 = 0
        while true {
            // Eight bytes at a time; the lowest flagged byte of the mask is exact (the
            // zero-byte tricks can only misflag bytes after a real hit).
            if i + 8 <= count {
                let word = UnsafeRawPointer(bytes + i).loadUnaligned(as: UInt64.self)
                let mask = Self.attentionMask(UInt64(littleEndian: word))
                if mask == 0 {
                    i += 8
                    continue
                }
                i += mask.trailingZeroBitCount >> 3
            }
            guard i < count else {
                position = i
                throw fail("Unterminated string")
            }
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") {
                break
            } else if byte == UInt8(ascii: "\\") {
                flags = JSONToken.hasEscapes
                position = i
                try validateEscape()
                i = position
            } else if byte < 0x20 {
                position = i
                throw fail("Unescaped control character in a string")
            } else if byte >= 0x80 {
                position = i
                try validateUTF8Sequence(byte)
                i = position
            } else {
                i += 1
            }
        }
        _ = append(.string, flags: flags, start: start, length: i - start)
        position = i + 1
    }

    /// High bit set in each byte that is a quote, a backslash, a control or a non-ASCII byte.
    @inline(__always)
    private static func attentionMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let hasQuote = (quote &- ones) & ~quote
        let hasBackslash = (backslash &- ones) & ~backslash
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl | word) & highs
    }

    private mutating func validateEscape() throws(JSONSyntaxError) {
        guard position + 1 < count else { throw fail("Unterminated escape") }
        switch bytes[position + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 2
        case UInt8(ascii: "u"):
            let unit = try readHex4(at: position + 2)
            position += 6
            if unit >= 0xD800 && unit < 0xDC00 {
                guard position + 1 < count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else { throw fail("Unpaired high surrogate") }
                let low = try readHex4(at: position + 2)
                guard low >= 0xDC00 && low < 0xE000 else { throw fail("Unpaired high surrogate") }
                position += 6
            } else if unit >= 0xDC00 && unit < 0xE000 {
                throw fail("Unpaired low surrogate")
            }
        default:
            throw fail("Invalid escape sequence")
        }
    }

    private func readHex4(at offset: Int) throws(JSONSyntaxError) -> UInt32 {
        guard offset + 4 <= count else { throw fail("Truncated \\u escape") }
        var value: UInt32 = 0
        for i in 0..<4 {
            guard let digit = JSONParser.hexValue(bytes[offset + i]) else { throw fail("Invalid \\u escape") }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Validates one multi-byte UTF-8 sequence (no overlong forms, no surrogates, at most U+10FFFF).
    private mutating func validateUTF8Sequence(_ lead: UInt8) throws(JSONSyntaxError) {
        var length = 0
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondHigh = 0x9F
        case 0xF0: length = 4; secondLow = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondHigh = 0x8F
        default: throw fail("Invalid UTF-8")
        }
        guard position + length <= count else { throw fail("Invalid UTF-8") }
        let second = bytes[position + 1]
        guard second >= secondLow && second <= secondHigh else { throw fail("Invalid UTF-8") }
        var i = 2
        while i < length {
            guard bytes[position + i] & 0xC0 == 0x80 else { throw fail("Invalid UTF-8") }
            i += 1
        }
        position += length
    }
}

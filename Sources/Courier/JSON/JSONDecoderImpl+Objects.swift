import Foundation

extension JSONDecoderImpl {
    /// The value token of member `name` of `object`, or `nil`; the first of duplicates wins.
    @inline(__always)
    func findMember(_ object: Int, _ name: UnsafeBufferPointer<UInt8>) -> Int? {
        let end = Int(tokens[object].next)
        if hintObject == object && hintKey < end && stringEquals(at: hintKey, name) {
            let value = hintKey + 1
            hintKey = Int(tokens[value].next)
            return value
        }
        var key = object + 1
        while key < end {
            let value = key + 1
            if stringEquals(at: key, name) {
                if tokens[object].flags & JSONToken.mayHaveDuplicateKeys == 0 {
                    hintObject = object
                    hintKey = Int(tokens[value].next)
                }
                return value
            }
            key = Int(tokens[value].next)
        }
        return nil
    }

    /// Marks `object` as free of duplicate keys (so in-order lookups may skip ahead), or not.
    /// Objects with many members are conservatively marked as possibly duplicated.
    func checkDuplicateKeys(_ object: Int) {
        let token = tokens[object]
        var flags = token.flags | JSONToken.keysChecked
        let members = Int(token.length)
        if members > 64 || (members > 1 && hasDuplicateKeys(object)) {
            flags |= JSONToken.mayHaveDuplicateKeys
        }
        tokens[object].flags = flags
    }

    /// Puts each key in one of 64 buckets by its length and first and last bytes: keys
    /// in different buckets differ, so a key is compared only with the earlier keys of its own
    /// bucket. Keys with escapes are compared as strings.
    private func hasDuplicateKeys(_ object: Int) -> Bool {
        let end = Int(tokens[object].next)
        var buckets: UInt64 = 0
        var key = object + 1
        while key < end {
            let token = tokens[key]
            if token.flags & JSONToken.hasEscapes != 0 { return hasDuplicateEscapedKeys(object) }
            let hash = keyHash(token)
            let bit: UInt64 = 1 &<< hash
            if buckets & bit != 0 && hasEarlierKey(like: key, hash: hash, in: object) { return true }
            buckets |= bit
            key = Int(tokens[key + 1].next)
        }
        return false
    }

    /// Whether a key before `key` in `object`, in the same bucket, has the same bytes.
    @inline(never)
    private func hasEarlierKey(like key: Int, hash: UInt64, in object: Int) -> Bool {
        var other = object + 1
        while other < key {
            if keyHash(tokens[other]) == hash && sameKey(other, key) { return true }
            other = Int(tokens[other + 1].next)
        }
        return false
    }

    /// A bucket in 0..<64 for an unescaped key.
    @inline(__always)
    private func keyHash(_ token: JSONToken) -> UInt64 {
        var hash = UInt64(token.length)
        if token.length > 0 {
            let start = bytes + Int(token.start)
            hash = hash &+ UInt64(start[0]) &* 7 &+ UInt64(start[Int(token.length) - 1]) &* 13
        }
        return hash & 63
    }

    private func hasDuplicateEscapedKeys(_ object: Int) -> Bool {
        var key = object + 1
        let end = Int(tokens[object].next)
        var names = Set<String>()
        while key < end {
            if !names.insert(string(at: key)).inserted { return true }
            key = Int(tokens[key + 1].next)
        }
        return false
    }

    private func sameKey(_ a: Int, _ b: Int) -> Bool {
        let first = tokens[a]
        let second = tokens[b]
        if (first.flags | second.flags) & JSONToken.hasEscapes != 0 { return string(at: a) == string(at: b) }
        return first.length == second.length
            && memcmp(bytes + Int(first.start), bytes + Int(second.start), Int(first.length)) == 0
    }

    /// Each member's key after the snake-case or custom key strategy.
    func convertedKeys(_ object: Int, path: [any CodingKey]) -> [String] {
        var result: [String] = []
        result.reserveCapacity(Int(tokens[object].length))
        var key = object + 1
        let end = Int(tokens[object].next)
        while key < end {
            let name = string(at: key)
            switch options.keyDecodingStrategy {
            case .convertFromSnakeCase: result.append(JSONKeyConversion.fromSnakeCase(name))
            case .custom(let convert): result.append(convert(path + [JSONKey(stringValue: name)]).stringValue)
            default: result.append(name)
            }
            key = Int(tokens[key + 1].next)
        }
        return result
    }

    // MARK: Foundation types

    private func checkNotNull(_ type: Any.Type, at value: Int, path: @autoclosure () -> [any CodingKey]) throws {
        if tokens[value].kind == .null {
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: path(), debugDescription: "Cannot get value of type \(type) -- found null value instead"
                ))
        }
    }

    private func read<T>(
        _ type: Any.Type, at value: Int, path: @autoclosure () -> [any CodingKey],
        _ body: (Int) throws(JSONValueFailure) -> T
    ) throws -> T {
        do {
            return try body(value)
        } catch {
            throw self.error(for: error, type: type, at: value, path: path())
        }
    }

    func decodeDate(at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?) throws -> Date {
        let valuePath = { self.path(depth: depth, suffix: suffix, appending: key) }
        try checkNotNull(Date.self, at: value, path: valuePath())
        switch options.dateDecodingStrategy {
        case .deferredToDate:
            return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try Date(from: self) }
        case .secondsSince1970:
            return Date(timeIntervalSince1970: try read(Double.self, at: value, path: valuePath(), doubleValue))
        case .millisecondsSince1970:
            return Date(timeIntervalSince1970: try read(Double.self, at: value, path: valuePath(), doubleValue) / 1000)
        case .iso8601:
            let text = try read(String.self, at: value, path: valuePath(), stringValue)
            guard let date = try? Date.ISO8601FormatStyle().parse(text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: valuePath(), debugDescription: "Expected date string to be ISO8601-formatted."))
            }
            return date
        case .custom(let closure):
            return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try closure(self) }
        @unknown default:
            return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try Date(from: self) }
        }
    }

    func decodeData(at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?) throws -> Data {
        let valuePath = { self.path(depth: depth, suffix: suffix, appending: key) }
        try checkNotNull(Data.self, at: value, path: valuePath())
        switch options.dataDecodingStrategy {
        case .deferredToData:
            return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try Data(from: self) }
        case .base64:
            let text = try read(String.self, at: value, path: valuePath(), stringValue)
            guard let data = Data(base64Encoded: text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: valuePath(), debugDescription: "Encountered Data is not valid Base64."))
            }
            return data
        case .custom(let closure):
            return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try closure(self) }
        @unknown default:
            return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try Data(from: self) }
        }
    }

    func decodeURL(at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?) throws -> URL {
        let valuePath = { self.path(depth: depth, suffix: suffix, appending: key) }
        try checkNotNull(URL.self, at: value, path: valuePath())
        let text = try read(String.self, at: value, path: valuePath(), stringValue)
        guard let url = URL(string: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: valuePath(), debugDescription: "Invalid URL string."))
        }
        return url
    }

    func decodeDecimal(at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?) throws -> Decimal {
        let valuePath = { self.path(depth: depth, suffix: suffix, appending: key) }
        try checkNotNull(Decimal.self, at: value, path: valuePath())
        guard tokens[value].kind == .number else {
            throw DecodingError.typeMismatch(Decimal.self, .init(codingPath: valuePath(), debugDescription: ""))
        }
        guard let decimal = Decimal(string: rawText(at: value), locale: nil) else {
            throw self.error(for: .notRepresentable, type: Decimal.self, at: value, path: valuePath())
        }
        return decimal
    }
}

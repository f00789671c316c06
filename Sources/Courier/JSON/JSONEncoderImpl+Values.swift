import Foundation

extension JSONEncoderImpl {
    /// Encodes `value` into the element just begun (or the top-level slot), with `key`
    /// appended to the coding path. Foundation's special cases come first.
    func encodeValue<T: Encodable>(
        _ value: T, level: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?
    ) throws {
        // Arrays skip the standard library's generic loop and its existential container.
        if T.self == [String].self {
            return try encodeArray(level: level, depth: depth, suffix: suffix, key: key) { container in
                for element in unsafeBitCast(value, to: [String].self) { try container.encode(element) }
            }
        } else if T.self == [Int].self {
            return try encodeArray(level: level, depth: depth, suffix: suffix, key: key) { container in
                for element in unsafeBitCast(value, to: [Int].self) { try container.encode(element) }
            }
        } else if T.self == [Double].self {
            return try encodeArray(level: level, depth: depth, suffix: suffix, key: key) { container in
                for element in unsafeBitCast(value, to: [Double].self) { try container.encode(element) }
            }
        } else if let arrayType = arrayType(T.self) {
            func encode<A: JSONArrayEncodable>(_ type: A.Type) throws {
                let array = unsafeBitCast(value, to: A.self)
                try encodeArray(level: level, depth: depth, suffix: suffix, key: key) {
                    try array.encodeElements(into: &$0)
                }
            }
            return try encode(arrayType)
        }
        if T.self == Date.self {
            return try encodeDate(value as! Date, level: level, depth: depth, suffix: suffix, key: key)
        } else if T.self == Data.self {
            return try encodeData(value as! Data, level: level, depth: depth, suffix: suffix, key: key)
        } else if T.self == URL.self {
            writer.write((value as! URL).absoluteString)
            return
        } else if T.self == Decimal.self {
            writer.write(raw: (value as! Decimal).description)
            return
        } else if !options.usesDefaultKeys, let dictionary = value as? any JSONStringDictionaryEncodable {
            return try withSlot(level: level, depth: depth, suffix: suffix, key: key) { slot in
                var container: JSONKeyedEncodingContainer<JSONKey> = self.keyedContainer(
                    slot: slot, id: self.frames[slot].id, depth: self.path.count, suffix: [])
                container.convertsKeys = false
                try dictionary.encodeUnconverted(into: &container)
            }
        }
        try withSlot(level: level, depth: depth, suffix: suffix, key: key) { _ in try value.encode(to: self) }
    }

    private func encodeArray(
        level: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?,
        _ body: (inout JSONUnkeyedEncodingContainer) throws -> Void
    ) throws {
        try withSlot(level: level, depth: depth, suffix: suffix, key: key) { slot in
            var container = unkeyedContainer(slot: slot, id: frames[slot].id, depth: path.count, suffix: [])
            try body(&container)
        }
    }

    /// `T` as an array type, or `nil`; remembered per encode call (a conformance check costs
    /// more than encoding a small value).
    private func arrayType<T>(_ type: T.Type) -> (any JSONArrayEncodable.Type)? {
        let id = ObjectIdentifier(type)
        for entry in arrayTypes where entry.id == id { return entry.array }
        let array = type as? any JSONArrayEncodable.Type
        if arrayTypes.count < 16 { arrayTypes.append((id, array)) }
        return array
    }

    /// Pushes a slot for one value, points the encoder at it with the right coding path,
    /// runs `body`, then closes whatever the value opened.
    @inline(__always)
    func withSlot(
        level: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?, _ body: (Int) throws -> Void
    ) throws {
        let slot = pushFrame(.slot, level: level)
        let savedFrame = valueFrame
        let savedID = valueFrameID
        let savedPath: [any CodingKey]?
        if suffix.isEmpty && path.count == depth {
            savedPath = nil
        } else {
            savedPath = path
            path = Array(path.prefix(depth)) + suffix
        }
        if let key { path.append(key) }
        valueFrame = slot
        valueFrameID = frames[slot].id
        defer {
            valueFrame = savedFrame
            valueFrameID = savedID
            if let savedPath {
                path = savedPath
            } else if key != nil {
                path.removeLast()
            }
        }
        try body(slot)
        if slot == 0 && frames[0].kind == .slot { throw TopLevelEmpty() }
        closeFrames(downTo: slot)
    }

    /// Thrown when the top-level value encoded nothing.
    struct TopLevelEmpty: Error {}

    func writeDouble(_ value: Double, path: @autoclosure () -> [any CodingKey]) throws {
        guard value.isFinite else { return try writeNonConforming(value, path: path()) }
        writer.write(float: value)
    }

    func writeFloat(_ value: Float, path: @autoclosure () -> [any CodingKey]) throws {
        guard value.isFinite else { return try writeNonConforming(value, path: path()) }
        writer.write(float: value)
    }

    private func writeNonConforming<T: BinaryFloatingPoint>(_ value: T, path: [any CodingKey]) throws {
        if case .convertToString(let positiveInfinity, let negativeInfinity, let nan) =
            options.nonConformingFloatEncodingStrategy
        {
            if value.isNaN {
                writer.write(nan)
            } else {
                writer.write(value > 0 ? positiveInfinity : negativeInfinity)
            }
            return
        }
        throw EncodingError.invalidValue(
            value, .init(codingPath: path, debugDescription: "Unable to encode \(T.self).\(value) directly in JSON."))
    }

    private func encodeDate(_ date: Date, level: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?) throws
    {
        let valuePath = { self.path(depth: depth, suffix: suffix, appending: key) }
        switch options.dateEncodingStrategy {
        case .deferredToDate:
            try withSlot(level: level, depth: depth, suffix: suffix, key: key) { _ in try date.encode(to: self) }
        case .secondsSince1970:
            try writeDouble(date.timeIntervalSince1970, path: valuePath())
        case .millisecondsSince1970:
            try writeDouble(1000.0 * date.timeIntervalSince1970, path: valuePath())
        case .iso8601:
            writer.write(date.formatted(.iso8601))
        case .custom(let closure):
            try withSlot(level: level, depth: depth, suffix: suffix, key: key) { _ in try closure(date, self) }
        @unknown default:
            try withSlot(level: level, depth: depth, suffix: suffix, key: key) { _ in try date.encode(to: self) }
        }
    }

    private func encodeData(_ data: Data, level: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?) throws
    {
        switch options.dataEncodingStrategy {
        case .deferredToData:
            try withSlot(level: level, depth: depth, suffix: suffix, key: key) { _ in try data.encode(to: self) }
        case .base64:
            writer.write(data.base64EncodedString())
        case .custom(let closure):
            try withSlot(level: level, depth: depth, suffix: suffix, key: key) { _ in try closure(data, self) }
        @unknown default:
            try withSlot(level: level, depth: depth, suffix: suffix, key: key) { _ in try data.encode(to: self) }
        }
    }

    // MARK: Sorted keys

    /// Reorders the members of a just-finished object by key, in place. Of two members with
    /// the same key the later one is kept, as Foundation's dictionary storage does.
    func sortMembers(of frame: JSONEncodingFrame) {
        let first = frame.entriesStart
        let count = entries.count - first
        withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { order in
            let base = writer.base
            // Insertion sort of entry indices: objects are small, and it is stable.
            var moved = false
            for i in 0..<count {
                let current = first + i
                var j = i
                while j > 0 && Self.compareKeys(entries[order[j - 1]], entries[current], base) > 0 {
                    order[j] = order[j - 1]
                    j -= 1
                }
                if j != i { moved = true }
                order[j] = current
            }
            // Keep the last of equal keys.
            var kept = 0
            for position in 0..<count {
                let index = order[position]
                if kept > 0, Self.compareKeys(entries[order[kept - 1]], entries[index], base) == 0 {
                    order[kept - 1] = index
                } else {
                    order[kept] = index
                    kept += 1
                }
            }
            if !moved && kept == count { return }
            rewriteMembers(of: frame, order: UnsafeBufferPointer(rebasing: order[..<kept]))
        }
    }

    /// Writes the members of the object that ends the output again, in `order`.
    private func rewriteMembers(of frame: JSONEncodingFrame, order: UnsafeBufferPointer<Int>) {
        let regionStart = entries[frame.entriesStart].separatorStart
        let regionEnd = writer.count
        let length = regionEnd - regionStart
        if scratch.count < length { scratch = [UInt8](repeating: 0, count: max(length, scratch.count * 2)) }
        let base = writer.base
        scratch.withUnsafeMutableBufferPointer { copy in
            copy.baseAddress!.update(from: base + regionStart, count: length)
            writer.truncate(to: regionStart)
            for (position, index) in order.enumerated() {
                let entry = entries[index]
                let end = index + 1 < entries.count ? entries[index + 1].separatorStart : regionEnd
                if position > 0 { writer.write(UInt8(ascii: ",")) }
                if writer.pretty { writer.newlineAndIndent(frame.level) }
                writer.copy(from: copy.baseAddress! + (entry.keyStart - regionStart), count: end - entry.keyStart)
            }
        }
    }

    /// Compares two written keys by their unescaped text: bytes when both are plain ASCII,
    /// else as Swift strings.
    static func compareKeys(_ a: JSONEncodingEntry, _ b: JSONEncodingEntry, _ base: UnsafeMutablePointer<UInt8>) -> Int
    {
        if a.isPlain && b.isPlain {
            let left = a.keyEnd - a.keyStart - 2
            let right = b.keyEnd - b.keyStart - 2
            let common = memcmp(base + a.keyStart + 1, base + b.keyStart + 1, min(left, right))
            if common != 0 { return Int(common) }
            return left == right ? 0 : (left < right ? -1 : 1)
        }
        let l = unescapedKey(a, base)
        let r = unescapedKey(b, base)
        if l.allSatisfy({ $0 < 0x80 }) && r.allSatisfy({ $0 < 0x80 }) {
            for (x, y) in zip(l, r) where x != y { return x < y ? -1 : 1 }
            return l.count == r.count ? 0 : (l.count < r.count ? -1 : 1)
        }
        let left = String(decoding: l, as: UTF8.self)
        let right = String(decoding: r, as: UTF8.self)
        return left == right ? 0 : (left < right ? -1 : 1)
    }

    private static func unescapedKey(_ entry: JSONEncodingEntry, _ base: UnsafeMutablePointer<UInt8>) -> [UInt8] {
        let start = base + entry.keyStart + 1
        let length = entry.keyEnd - entry.keyStart - 2
        return [UInt8](unsafeUninitializedCapacity: max(length, 1)) { buffer, count in
            count = JSONDecoderImpl.unescape(start, length, into: buffer.baseAddress!)
        }
    }
}

/// Arrays encode their elements straight into a concrete unkeyed container.
protocol JSONArrayEncodable {
    func encodeElements(into container: inout JSONUnkeyedEncodingContainer) throws
}

extension Array: JSONArrayEncodable where Element: Encodable {
    func encodeElements(into container: inout JSONUnkeyedEncodingContainer) throws {
        for element in self { try container.encode(element) }
    }
}

/// `[String: V]` keeps its keys as they are, whatever the key strategy (as in Foundation).
protocol JSONStringDictionaryEncodable {
    func encodeUnconverted(into container: inout JSONKeyedEncodingContainer<JSONKey>) throws
}

extension Dictionary: JSONStringDictionaryEncodable where Key == String, Value: Encodable {
    func encodeUnconverted(into container: inout JSONKeyedEncodingContainer<JSONKey>) throws {
        for (key, value) in self {
            try container.encode(value, forKey: JSONKey(stringValue: key))
        }
    }
}

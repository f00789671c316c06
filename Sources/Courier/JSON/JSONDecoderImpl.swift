import Foundation
import Synchronization

/// Why a scalar could not be read, before a coding path is attached.
enum JSONValueFailure: Error {
    case null
    case mismatch
    case notRepresentable
    case corrupted(String)
}

/// The options of a ``CourierJSONDecoder``, built when one of them is set and shared by its
/// decode calls (a reference: a call retains it instead of copying four enums and a dictionary).
final class JSONDecodingOptions: Sendable {
    let keyDecodingStrategy: JSONDecoder.KeyDecodingStrategy
    let dateDecodingStrategy: JSONDecoder.DateDecodingStrategy
    let dataDecodingStrategy: JSONDecoder.DataDecodingStrategy
    let nonConformingFloatDecodingStrategy: JSONDecoder.NonConformingFloatDecodingStrategy
    let userInfo: [CodingUserInfoKey: any Sendable]
    let usesDefaultKeys: Bool

    init(
        keyDecodingStrategy: JSONDecoder.KeyDecodingStrategy, dateDecodingStrategy: JSONDecoder.DateDecodingStrategy,
        dataDecodingStrategy: JSONDecoder.DataDecodingStrategy,
        nonConformingFloatDecodingStrategy: JSONDecoder.NonConformingFloatDecodingStrategy,
        userInfo: [CodingUserInfoKey: any Sendable]
    ) {
        self.keyDecodingStrategy = keyDecodingStrategy
        self.dateDecodingStrategy = dateDecodingStrategy
        self.dataDecodingStrategy = dataDecodingStrategy
        self.nonConformingFloatDecodingStrategy = nonConformingFloatDecodingStrategy
        self.userInfo = userInfo
        if case .useDefaultKeys = keyDecodingStrategy { usesDefaultKeys = true } else { usesDefaultKeys = false }
    }

    /// Foundation's defaults; also what an idle pooled decoder holds (nothing of a caller's).
    static let `default` = JSONDecodingOptions(
        keyDecodingStrategy: .useDefaultKeys, dateDecodingStrategy: .deferredToDate, dataDecodingStrategy: .base64,
        nonConformingFloatDecodingStrategy: .throw, userInfo: [:])
}

/// Everything a ``JSONDecoderImpl`` reads and changes during one decode call.
struct JSONDecoderState {
    var bytes: UnsafePointer<UInt8>
    var tokens: UnsafeMutablePointer<JSONToken>
    /// Index of a `null` token appended after the document, for `superDecoder` of absent keys.
    var nullIndex: Int
    var options: JSONDecodingOptions
    var index: Int
    var path: [any CodingKey]
    var hintObject = -1
    var hintKey = 0
    var isValid = true
    var collectionTypes: [(id: ObjectIdentifier, collection: (any JSONCollectionDecodable.Type)?)] = []
    /// A type that is decoded through its `init(from:)`, without special handling.
    var lastPlainType: ObjectIdentifier?
    /// Path suffixes and converted keys of the keyed containers that need them.
    var extras: [JSONContainerExtras] = []
    /// Decoders made by `superDecoder()`, finished with this one.
    var subDecoders: [JSONDecoderImpl] = []
    /// The token buffer this decoder owns, kept from call to call.
    var storage = JSONTokenStorage()
}

/// The `Decoder` handed to `init(from:)`, moved over the tape; pooled (see `make`).
///
/// Nested values are decoded by pointing `index` at them and pushing a key on `path`, then
/// restoring both, so decoding a nested struct allocates nothing but its container box.
/// Containers remember the path depth at which they were made.
///
/// `@unchecked Sendable`: only the pool hands instances from thread to thread (under its
/// lock); one decode call at a time uses an instance.
final class JSONDecoderImpl: Decoder, @unchecked Sendable {
    /// The mutable state lives behind a pointer: it is read and written for every value, and
    /// stored class properties would pay a dynamic exclusivity check on each access.
    let state: UnsafeMutablePointer<JSONDecoderState>
    /// Changes when a decode call starts and when it ends; keyed containers compare it.
    ///
    /// Atomic because a keyed container that escaped its call may read it on one thread
    /// while the pool has handed the decoder to a call on another. Only the thread running
    /// the decoder's call writes it, so a relaxed load and store are enough: a stale
    /// container sees some later value, never its own again.
    private let generationCounter = Atomic<Int>(0)

    var bytes: UnsafePointer<UInt8> { @inline(__always) get { state.pointee.bytes } }
    var tokens: UnsafeMutablePointer<JSONToken> { @inline(__always) get { state.pointee.tokens } }
    var nullIndex: Int { @inline(__always) get { state.pointee.nullIndex } }
    var options: JSONDecodingOptions { @inline(__always) get { state.pointee.options } }
    /// The token of the value `init(from:)` is decoding right now.
    var index: Int {
        @inline(__always) get { state.pointee.index }
        @inline(__always) set { state.pointee.index = newValue }
    }
    /// The coding path of the value at `index`.
    var path: [any CodingKey] {
        @inline(__always) get { state.pointee.path }
        @inline(__always) _modify { yield &state.pointee.path }
    }
    /// The object whose members were last looked up, and the key token expected next.
    var hintObject: Int {
        @inline(__always) get { state.pointee.hintObject }
        @inline(__always) set { state.pointee.hintObject = newValue }
    }
    var hintKey: Int {
        @inline(__always) get { state.pointee.hintKey }
        @inline(__always) set { state.pointee.hintKey = newValue }
    }
    var collectionTypes: [(id: ObjectIdentifier, collection: (any JSONCollectionDecodable.Type)?)] {
        @inline(__always) get { state.pointee.collectionTypes }
        @inline(__always) _modify { yield &state.pointee.collectionTypes }
    }
    /// Cleared when the decode call returns; the bytes are gone after that.
    var isValid: Bool {
        @inline(__always) get { state.pointee.isValid }
        @inline(__always) set { state.pointee.isValid = newValue }
    }
    var generation: Int { @inline(__always) get { generationCounter.load(ordering: .relaxed) } }

    /// Starts or ends a decode call (see ``generation``).
    @inline(__always)
    func advanceGeneration() {
        generationCounter.store(generationCounter.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    init(
        bytes: UnsafePointer<UInt8>, tokens: UnsafeMutablePointer<JSONToken>, nullIndex: Int,
        options: JSONDecodingOptions, index: Int, path: [any CodingKey]
    ) {
        self.state = .allocate(capacity: 1)
        state.initialize(
            to: JSONDecoderState(
                bytes: bytes, tokens: tokens, nullIndex: nullIndex, options: options, index: index, path: path))
        state.pointee.path.reserveCapacity(16)
    }

    deinit {
        state.pointee.storage.trim(keepingUpTo: 0)
        state.deinitialize(count: 1)
        state.deallocate()
    }

    var codingPath: [any CodingKey] { path }
    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }

    func checkValid() throws {
        guard isValid else { throw Self.usedAfterReturn }
    }

    static var usedAfterReturn: DecodingError {
        .dataCorrupted(
            .init(codingPath: [], debugDescription: "A decoder or container was used after its decode call returned."))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try checkValid()
        return KeyedDecodingContainer(
            try JSONKeyedContainer<Key>(impl: self, object: index, depth: path.count, suffix: []))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try checkValid()
        return try JSONUnkeyedContainer(impl: self, array: index, depth: path.count, suffix: [])
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try checkValid()
        return JSONSingleValueContainer(impl: self, value: index, depth: path.count)
    }

    /// The coding path of a container made at `depth`, plus an optional last key.
    func path(depth: Int, suffix: [any CodingKey] = [], appending key: (any CodingKey)? = nil) -> [any CodingKey] {
        var result = Array(path.prefix(depth))
        result.append(contentsOf: suffix)
        if let key { result.append(key) }
        return result
    }

    // MARK: Nested values

    /// Decodes the value at token `value` as `T`, with `key` appended to the coding path.
    ///
    /// Date, Data, URL, Decimal and (with a key strategy) `[String: V]` are special-cased
    /// like Foundation does; everything else goes through `T.init(from:)`.
    func decodeValue<T: Decodable>(
        _ type: T.Type, at value: Int, depth: Int, suffix: [any CodingKey] = [], key: (any CodingKey)?
    ) throws -> T {
        // The type decoded last through `init(from:)` (typically an array's element type).
        if ObjectIdentifier(T.self) == state.pointee.lastPlainType {
            return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try T(from: self) }
        }
        // Scalars first: the usual elements of arrays and dictionaries.
        if T.self == String.self {
            return unsafeBitCast(
                try scalar(String.self, at: value, depth: depth, suffix: suffix, key: key, stringValue), to: T.self)
        } else if T.self == Int.self {
            return unsafeBitCast(
                try scalar(Int.self, at: value, depth: depth, suffix: suffix, key: key) {
                    (v) throws(JSONValueFailure) in try integerValue(at: v, as: Int.self)
                }, to: T.self)
        } else if T.self == Double.self {
            return unsafeBitCast(
                try scalar(Double.self, at: value, depth: depth, suffix: suffix, key: key, doubleValue), to: T.self)
        } else if T.self == Bool.self {
            return unsafeBitCast(
                try scalar(Bool.self, at: value, depth: depth, suffix: suffix, key: key, boolValue), to: T.self)
        } else if T.self == [String].self {
            return unsafeBitCast(
                try scalarArray(String.self, at: value, depth: depth, suffix: suffix, key: key), to: T.self)
        } else if T.self == [Int].self {
            return unsafeBitCast(
                try scalarArray(Int.self, at: value, depth: depth, suffix: suffix, key: key), to: T.self)
        } else if T.self == [Double].self {
            return unsafeBitCast(
                try scalarArray(Double.self, at: value, depth: depth, suffix: suffix, key: key), to: T.self)
        } else if let collection = collectionType(T.self) {
            func decode<C: JSONCollectionDecodable>(_ type: C.Type) throws -> T {
                unsafeBitCast(
                    try C.decodeJSON(impl: self, at: value, depth: depth, suffix: suffix, key: key), to: T.self)
            }
            return try decode(collection)
        } else if T.self == Date.self {
            return try decodeDate(at: value, depth: depth, suffix: suffix, key: key) as! T
        } else if T.self == Data.self {
            return try decodeData(at: value, depth: depth, suffix: suffix, key: key) as! T
        } else if T.self == URL.self {
            return try decodeURL(at: value, depth: depth, suffix: suffix, key: key) as! T
        } else if T.self == Decimal.self {
            return try decodeDecimal(at: value, depth: depth, suffix: suffix, key: key) as! T
        }
        state.pointee.lastPlainType = ObjectIdentifier(T.self)
        return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try T(from: self) }
    }

    /// Runs `body` with the decoder pointed at `value` and the path at `depth` + `suffix` + `key`.
    @inline(__always)
    func withValue<R>(
        at value: Int, depth: Int, suffix: [any CodingKey] = [], key: (any CodingKey)?, _ body: () throws -> R
    ) throws -> R {
        guard path.count >= depth else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "A container was used outside the decode call that made it."))
        }
        let savedIndex = index
        let savedHintObject = hintObject
        let savedHintKey = hintKey
        let savedPath: [any CodingKey]?
        if suffix.isEmpty && path.count == depth {
            savedPath = nil
        } else {
            // A nested container, or one used out of nesting order: rebuild its path.
            savedPath = path
            path.removeSubrange(depth...)
            path.append(contentsOf: suffix)
        }
        if let key { path.append(key) }
        index = value
        defer {
            index = savedIndex
            hintObject = savedHintObject
            hintKey = savedHintKey
            if let savedPath {
                path = savedPath
            } else if key != nil {
                path.removeLast()
            }
        }
        return try body()
    }

    /// An array of scalars, read in specialized code (no generic array growth).
    private func scalarArray<E: JSONScalar>(
        _ type: E.Type, at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?
    ) throws -> [E] {
        let token = tokens[value]
        guard token.kind == .array else {
            let path = path(depth: depth, suffix: suffix, appending: key)
            if token.kind == .null {
                throw DecodingError.valueNotFound(
                    [Any].self,
                    .init(
                        codingPath: path,
                        debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
            }
            throw error(for: .mismatch, type: [Any].self, at: value, path: path)
        }
        let count = Int(token.length)
        var result: [E] = []
        result.reserveCapacity(count)
        var cursor = value + 1
        for index in 0..<count {
            do {
                result.append(try E.read(self, at: cursor))
            } catch {
                var path = path(depth: depth, suffix: suffix, appending: key)
                path.append(JSONKey(index: index))
                throw self.error(for: error, type: E.self, at: cursor, path: path)
            }
            cursor = Int(tokens[cursor].next)
        }
        return result
    }

    /// `T` as an array or `[String: V]` type, or `nil`; remembered per decode call because a
    /// conformance check costs more than decoding a small value.
    private func collectionType<T>(_ type: T.Type) -> (any JSONCollectionDecodable.Type)? {
        let id = ObjectIdentifier(type)
        for entry in collectionTypes where entry.id == id { return entry.collection }
        let collection = type as? any JSONCollectionDecodable.Type
        if collectionTypes.count < 16 { collectionTypes.append((id, collection)) }
        return collection
    }

    @inline(__always)
    private func scalar<R>(
        _ type: R.Type, at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?,
        _ read: (Int) throws(JSONValueFailure) -> R
    ) throws -> R {
        do {
            return try read(value)
        } catch {
            throw self.error(
                for: error, type: type, at: value, path: path(depth: depth, suffix: suffix, appending: key))
        }
    }

    // MARK: Errors

    /// Turns a failure into the `DecodingError` Foundation throws for it.
    func error(for failure: JSONValueFailure, type: Any.Type, at value: Int, path: [any CodingKey]) -> DecodingError {
        switch failure {
        case .null:
            return .valueNotFound(
                type,
                .init(
                    codingPath: path, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        case .mismatch:
            return .typeMismatch(
                type,
                .init(
                    codingPath: path,
                    debugDescription: "Expected to decode \(type) but found \(describe(tokens[value].kind)) instead."))
        case .notRepresentable:
            return .dataCorrupted(
                .init(
                    codingPath: path,
                    debugDescription: "Parsed JSON number <\(rawText(at: value))> does not fit in \(type)."))
        case .corrupted(let message):
            return .dataCorrupted(.init(codingPath: path, debugDescription: message))
        }
    }

    func describe(_ kind: JSONTokenKind) -> String {
        switch kind {
        case .null: return "null"
        case .true, .false: return "a bool"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "a dictionary"
        }
    }

    func rawText(at value: Int) -> String {
        let token = tokens[value]
        return String(
            decoding: UnsafeBufferPointer(start: bytes + Int(token.start), count: Int(token.length)), as: UTF8.self)
    }
}

/// The coding key of array elements and of dictionary keys in coding paths.
///
/// An enum so that it fits an existential's inline buffer (no allocation when pushed on a
/// coding path) and an element's `"Index 3"` name is only built when someone asks.
enum JSONKey: CodingKey {
    case string(String)
    case int(Int)
    case index(Int)

    init(stringValue: String) { self = .string(stringValue) }

    init(intValue: Int) { self = .int(intValue) }

    /// Foundation's key for element `index` of an array: `"Index 3"`, int value 3.
    init(index: Int) { self = .index(index) }

    var stringValue: String {
        switch self {
        case .string(let string): return string
        case .int(let int): return "\(int)"
        case .index(let index): return "Index \(index)"
        }
    }

    var intValue: Int? {
        switch self {
        case .string: return nil
        case .int(let int), .index(let int): return int
        }
    }

    static let `super` = JSONKey.string("super")
}

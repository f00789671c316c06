import Foundation

/// The options of one encode call, copied from ``CourierJSONEncoder``.
struct JSONEncodingOptions {
    var outputFormatting: JSONEncoder.OutputFormatting
    var dateEncodingStrategy: JSONEncoder.DateEncodingStrategy
    var dataEncodingStrategy: JSONEncoder.DataEncodingStrategy
    var nonConformingFloatEncodingStrategy: JSONEncoder.NonConformingFloatEncodingStrategy
    var keyEncodingStrategy: JSONEncoder.KeyEncodingStrategy
    var userInfo: [CodingUserInfoKey: any Sendable]
    var usesDefaultKeys: Bool
    var sortsKeys: Bool
}

/// One open value of the output: a slot waiting for a value, an object or array being
/// written, or a slot already filled with a scalar.
struct JSONEncodingFrame {
    enum Kind { case slot, object, array, done }
    var kind: Kind
    let id: Int
    /// Nesting level of the container this frame is (or would be), for indentation.
    let level: Int
    var count = 0
    /// First of this object's entries in `JSONEncoderImpl.entries` (sorted output only).
    var entriesStart = 0
}

/// Where one object member sits in the output, so members can be sorted in place.
struct JSONEncodingEntry {
    /// Offset of the separator before the member (or of the member when first).
    var separatorStart: Int
    /// Offset of the opening quote of the key.
    var keyStart: Int
    /// Offset just after the closing quote of the key.
    var keyEnd: Int
    /// The key is ASCII without escapes, so its bytes compare like its text.
    var isPlain: Bool
}

/// What a ``JSONEncoderImpl`` changes while it writes.
struct JSONEncoderState {
    var writer: JSONWriter
    var path: [any CodingKey] = []
    var frames: [JSONEncodingFrame] = []
    var entries: [JSONEncodingEntry] = []
    var scratch: [UInt8] = []
    var nextFrameID = 0
    var valueFrame = 0
    var valueFrameID = 0
    var deferredError: EncodingError?
    var arrayTypes: [(id: ObjectIdentifier, array: (any JSONArrayEncodable.Type)?)] = []
}

/// The `Encoder` handed to `encode(to:)`: it writes JSON as values arrive, in one pass.
///
/// Open containers form a stack of frames. Writing into a container first closes every
/// frame opened after it, so containers end implicitly, in the order Codable code uses them.
/// A container used after a later sibling was opened throws (Foundation would merge them).
final class JSONEncoderImpl: Encoder {
    let options: JSONEncodingOptions
    /// The mutable state lives behind a pointer: stored class properties would pay a dynamic
    /// exclusivity check on every byte written.
    private let state: UnsafeMutablePointer<JSONEncoderState>

    var writer: JSONWriter {
        @inline(__always) get { state.pointee.writer }
        @inline(__always) _modify { yield &state.pointee.writer }
    }
    var path: [any CodingKey] {
        @inline(__always) get { state.pointee.path }
        @inline(__always) _modify { yield &state.pointee.path }
    }
    var frames: [JSONEncodingFrame] {
        @inline(__always) get { state.pointee.frames }
        @inline(__always) _modify { yield &state.pointee.frames }
    }
    var entries: [JSONEncodingEntry] {
        @inline(__always) get { state.pointee.entries }
        @inline(__always) _modify { yield &state.pointee.entries }
    }
    /// Reused copy space for sorting members.
    var scratch: [UInt8] {
        @inline(__always) get { state.pointee.scratch }
        @inline(__always) _modify { yield &state.pointee.scratch }
    }
    var nextFrameID: Int {
        @inline(__always) get { state.pointee.nextFrameID }
        @inline(__always) set { state.pointee.nextFrameID = newValue }
    }
    /// The slot of the value `encode(to:)` is encoding right now.
    var valueFrame: Int {
        @inline(__always) get { state.pointee.valueFrame }
        @inline(__always) set { state.pointee.valueFrame = newValue }
    }
    var valueFrameID: Int {
        @inline(__always) get { state.pointee.valueFrameID }
        @inline(__always) set { state.pointee.valueFrameID = newValue }
    }
    var arrayTypes: [(id: ObjectIdentifier, array: (any JSONArrayEncodable.Type)?)] {
        @inline(__always) get { state.pointee.arrayTypes }
        @inline(__always) _modify { yield &state.pointee.arrayTypes }
    }
    /// A misuse found where the API cannot throw; thrown when the encode call ends.
    var deferredError: EncodingError? {
        @inline(__always) get { state.pointee.deferredError }
        @inline(__always) set { state.pointee.deferredError = newValue }
    }

    init(options: JSONEncodingOptions) {
        self.options = options
        state = .allocate(capacity: 1)
        state.initialize(
            to: JSONEncoderState(
                writer: JSONWriter(
                    capacity: 256, escapesSlashes: !options.outputFormatting.contains(.withoutEscapingSlashes),
                    pretty: options.outputFormatting.contains(.prettyPrinted))))
        state.pointee.frames.reserveCapacity(16)
        state.pointee.path.reserveCapacity(16)
    }

    deinit {
        state.pointee.writer.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    var codingPath: [any CodingKey] { path }
    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(keyedContainer(slot: valueFrame, id: valueFrameID, depth: path.count, suffix: []))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        unkeyedContainer(slot: valueFrame, id: valueFrameID, depth: path.count, suffix: [])
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONSingleValueEncodingContainer(impl: self, frame: valueFrame, id: valueFrameID, depth: path.count, suffix: [])
    }

    // MARK: Frames

    func isOpen(_ frame: Int, _ id: Int) -> Bool { frame < frames.count && frame >= 0 && frames[frame].id == id }

    func misuse(_ message: String, path: [any CodingKey]) -> EncodingError {
        let error = EncodingError.invalidValue(
            (), .init(codingPath: path, debugDescription: "CourierJSONEncoder writes in one pass: \(message)"))
        if deferredError == nil { deferredError = error }
        return error
    }

    /// Foundation's writer refuses containers nested deeper than this.
    static let maximumDepth = 511

    /// Records Foundation's error for output nested too deeply.
    func checkDepth(_ level: Int) {
        if level > Self.maximumDepth && deferredError == nil {
            deferredError = .invalidValue(
                (), .init(codingPath: [], debugDescription: "Unable to encode the given top-level value to JSON."))
        }
    }

    @discardableResult
    func pushFrame(_ kind: JSONEncodingFrame.Kind, level: Int) -> Int {
        if kind != .slot { checkDepth(level) }
        nextFrameID += 1
        frames.append(JSONEncodingFrame(kind: kind, id: nextFrameID, level: level, entriesStart: entries.count))
        if kind == .object {
            writer.write(UInt8(ascii: "{"))
        } else if kind == .array {
            writer.write(UInt8(ascii: "["))
        }
        return frames.count - 1
    }

    /// Turns slot `frame` into an open object or array.
    func openFrame(_ frame: Int, as kind: JSONEncodingFrame.Kind) {
        checkDepth(frames[frame].level)
        frames[frame].kind = kind
        frames[frame].entriesStart = entries.count
        writer.write(kind == .object ? UInt8(ascii: "{") : UInt8(ascii: "["))
    }

    /// Closes frames until only `count` remain.
    func closeFrames(downTo count: Int) {
        while frames.count > count { closeTop() }
    }

    private func closeTop() {
        var frame = frames.removeLast()
        if frame.kind == .slot {
            // A value that encoded nothing: Foundation writes an empty object.
            frame.kind = .object
            writer.write(UInt8(ascii: "{"))
        }
        switch frame.kind {
        case .object:
            if options.sortsKeys && frame.count > 1 { sortMembers(of: frame) }
            entries.removeSubrange(frame.entriesStart...)
            if writer.pretty {
                if frame.count == 0 { writer.write(0x0A) }
                writer.newlineAndIndent(frame.level - 1)
            }
            writer.write(UInt8(ascii: "}"))
        case .array:
            if writer.pretty {
                if frame.count == 0 { writer.write(0x0A) }
                writer.newlineAndIndent(frame.level - 1)
            }
            writer.write(UInt8(ascii: "]"))
        case .slot, .done:
            break
        }
    }

    /// Prepares container `frame` for its next element: closes later frames, writes the
    /// separator and, for objects, the key.
    @inline(__always)
    func beginElement(_ frame: Int, _ id: Int, key: String?) -> Bool {
        guard isOpen(frame, id) else { return false }
        if frames.count > frame + 1 { closeFrames(downTo: frame + 1) }
        let separatorStart = writer.count
        if frames[frame].count > 0 { writer.write(UInt8(ascii: ",")) }
        frames[frame].count += 1
        if writer.pretty { writer.newlineAndIndent(frames[frame].level) }
        if let key {
            let keyStart = writer.count
            writer.write(key)
            if options.sortsKeys {
                var isPlain = true
                for offset in (keyStart + 1)..<(writer.count - 1)
                where writer.base[offset] >= 0x80 || writer.base[offset] == 0x5C {
                    isPlain = false
                    break
                }
                entries.append(
                    JSONEncodingEntry(
                        separatorStart: separatorStart, keyStart: keyStart, keyEnd: writer.count, isPlain: isPlain))
            }
            if writer.pretty { writer.write(ascii: " : ") } else { writer.write(UInt8(ascii: ":")) }
        }
        return true
    }

    /// The key as written: the key strategy applied.
    func encodedKey(_ key: some CodingKey, depth: Int, suffix: [any CodingKey]) -> String {
        if options.usesDefaultKeys { return key.stringValue }
        switch options.keyEncodingStrategy {
        case .convertToSnakeCase: return JSONKeyConversion.toSnakeCase(key.stringValue)
        case .custom(let convert): return convert(path(depth: depth, suffix: suffix, appending: key)).stringValue
        default: return key.stringValue
        }
    }

    func path(depth: Int, suffix: [any CodingKey], appending key: (any CodingKey)? = nil) -> [any CodingKey] {
        var result = Array(path.prefix(depth))
        result.append(contentsOf: suffix)
        if let key { result.append(key) }
        return result
    }

    // MARK: Containers

    func keyedContainer<Key: CodingKey>(slot: Int, id: Int, depth: Int, suffix: [any CodingKey])
        -> JSONKeyedEncodingContainer<Key>
    {
        var frame = -1
        var frameID = 0
        if isOpen(slot, id) {
            switch frames[slot].kind {
            case .slot:
                closeFrames(downTo: slot + 1)
                openFrame(slot, as: .object)
                frame = slot
                frameID = id
            case .object:
                closeFrames(downTo: slot + 1)
                frame = slot
                frameID = id
            default:
                _ = misuse(
                    "a keyed container was requested after a value was encoded",
                    path: path(depth: depth, suffix: suffix))
            }
        } else {
            _ = misuse(
                "a keyed container was requested after its value was finished", path: path(depth: depth, suffix: suffix)
            )
        }
        return JSONKeyedEncodingContainer<Key>(impl: self, frame: frame, id: frameID, depth: depth, suffix: suffix)
    }

    func unkeyedContainer(slot: Int, id: Int, depth: Int, suffix: [any CodingKey]) -> JSONUnkeyedEncodingContainer {
        var frame = -1
        var frameID = 0
        if isOpen(slot, id) {
            switch frames[slot].kind {
            case .slot:
                closeFrames(downTo: slot + 1)
                openFrame(slot, as: .array)
                frame = slot
                frameID = id
            case .array:
                closeFrames(downTo: slot + 1)
                frame = slot
                frameID = id
            default:
                _ = misuse(
                    "an unkeyed container was requested after a value was encoded",
                    path: path(depth: depth, suffix: suffix))
            }
        } else {
            _ = misuse(
                "an unkeyed container was requested after its value was finished",
                path: path(depth: depth, suffix: suffix))
        }
        return JSONUnkeyedEncodingContainer(impl: self, frame: frame, id: frameID, depth: depth, suffix: suffix)
    }

    /// Opens a new object or array as the element just begun in frame `parent`.
    func openNested(_ kind: JSONEncodingFrame.Kind, parent: Int) -> (frame: Int, id: Int) {
        let frame = pushFrame(kind, level: frames[parent].level + 1)
        return (frame, frames[frame].id)
    }
}

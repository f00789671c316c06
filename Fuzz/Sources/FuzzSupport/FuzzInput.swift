/// Reads a fuzzer's bytes as a stream of decisions and fields, so one input drives
/// several choices (which model, which options) and the payload.
///
/// Every read succeeds: past the end it yields zeros and empty slices, so no input is
/// rejected for being short.
public struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    /// - Parameter bytes: the fuzzer's input.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// - Parameters:
    ///   - data: the fuzzer's input pointer (may be nil when size is 0).
    ///   - size: its length.
    public init(data: UnsafePointer<UInt8>?, size: Int) {
        guard let data, size > 0 else {
            self.bytes = []
            return
        }
        self.bytes = Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte, or 0 past the end.
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A number in `0..<count` taken from the next byte.
    public mutating func choice(_ count: Int) -> Int { count <= 1 ? 0 : Int(byte()) % count }

    /// The next byte's low bit.
    public mutating func flag() -> Bool { byte() & 1 == 1 }

    /// The next two bytes, big-endian.
    public mutating func u16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    /// The next eight bytes, big-endian.
    public mutating func u64() -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return value
    }

    /// Bytes up to (not including) the next `separator`, or to the end.
    public mutating func field(until separator: UInt8) -> [UInt8] {
        let start = min(offset, bytes.count)
        var end = start
        while end < bytes.count, bytes[end] != separator { end += 1 }
        offset = end + 1
        return Array(bytes[start..<end])
    }

    /// Whatever has not been read yet.
    public mutating func rest() -> [UInt8] {
        let start = min(offset, bytes.count)
        offset = bytes.count
        return Array(bytes[start...])
    }
}

/// Stops the run with `message` when `condition` is false. Unlike `precondition`, whose message
/// release builds drop, the message reaches the fuzzer's log, so a finding says which invariant broke.
public func invariant(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String = "",
    file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { fatalError("invariant broken: \(message())", file: file, line: line) }
}

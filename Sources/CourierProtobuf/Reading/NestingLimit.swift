import CProtobufC

/// How deep messages nest, in a schema and in wire bytes.
///
/// protobuf-c unpacks sub-messages recursively with no limit of its own, and Courier's readers
/// recurse with it. A schema that cannot nest deeper than the decoder's limit needs no check;
/// for a recursive (or very deep) one, the bytes are walked first, without allocating, and a
/// message nested deeper than the limit is refused before protobuf-c sees it.
enum NestingLimit {
    /// The deepest nesting a message of `descriptor` can have (1: no message fields), or
    /// `Int.max` when the schema is recursive.
    static func schemaDepth(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> Int {
        var visiting: Set<UnsafeRawPointer> = []
        var known: [UnsafeRawPointer: Int] = [:]
        return depth(descriptor, &visiting, &known)
    }

    private static func depth(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ visiting: inout Set<UnsafeRawPointer>,
        _ known: inout [UnsafeRawPointer: Int]
    ) -> Int {
        let key = UnsafeRawPointer(descriptor)
        if let depth = known[key] { return depth }
        guard visiting.insert(key).inserted else { return .max }
        defer { visiting.remove(key) }
        var deepest = 0
        for i in 0..<Int(descriptor.pointee.n_fields) {
            let field = descriptor.pointee.fields[i]
            guard field.type == PROTOBUF_C_TYPE_MESSAGE, let child = field.descriptor else { continue }
            deepest = max(
                deepest, depth(child.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), &visiting, &known))
            if deepest == .max { break }
        }
        let result = deepest == .max ? Int.max : deepest + 1
        known[key] = result
        return result
    }

    /// Whether no message in `bytes` (a message of `descriptor`) nests deeper than `limit`
    /// (the top-level message is depth 1). Bytes that are malformed past what the walk needs
    /// count as within the limit: protobuf-c refuses them next.
    static func allows(
        _ bytes: UnsafeRawBufferPointer, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, limit: Int
    ) -> Bool {
        guard let start = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
        return scan(start, bytes.count, descriptor, depth: 1, limit: limit)
    }

    /// Recurses once per nesting level, at most `limit` deep.
    private static func scan(
        _ bytes: UnsafePointer<UInt8>, _ count: Int, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        depth: Int, limit: Int
    ) -> Bool {
        // Malformed bytes end the walk (`next()` is nil): protobuf-c refuses them.
        var cursor = WireCursor(bytes: bytes, count: count)
        while let field = cursor.next() {
            guard field.wireType == 2, let message = descriptor.messageField(field.number) else { continue }
            guard depth < limit else { return false }
            let payload = field.payload
            guard scan(bytes + payload.lowerBound, payload.count, message.child, depth: depth + 1, limit: limit) else {
                return false
            }
        }
        return true
    }
}

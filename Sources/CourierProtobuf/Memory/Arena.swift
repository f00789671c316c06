import CProtobufC
import Synchronization

/// A bump allocator for the C memory of one decode or encode: protobuf-c's unpacked message
/// (through a `ProtobufCAllocator`) or the message Courier builds before packing.
///
/// Everything lives in 8 KiB chunks (a block of its own for large requests) that are released
/// together; freeing single allocations is a no-op. The arena's state sits in the header of its
/// first chunk, so allocating costs no reference counting and no exclusivity checks. A few
/// released first chunks are kept for reuse (taking and returning one is an atomic exchange),
/// which spares `malloc` and `free` on the hot path.
///
/// The arena also counts the bytes it handed out (``used``, which bounds the packed size of a
/// message built in it, see ``EncodingSession``) and keeps the list of map fields written into
/// an encoded message, which are sorted before packing.
@usableFromInline
struct Arena {
    /// The header at the start of the first chunk.
    private struct Header {
        var cursor: UnsafeMutableRawPointer
        var end: UnsafeMutableRawPointer
        /// Where the current chunk's allocations start (to count ``used``).
        var start: UnsafeMutableRawPointer
        /// Bytes handed out from chunks and blocks before the current chunk.
        var retired: Int
        /// Extra chunks and large blocks, chained through their first word.
        var extra: UnsafeMutableRawPointer?
        /// Map fields written into an encoded message (``MapRecord``s in the arena).
        var maps: UnsafeMutableRawPointer?
        /// What protobuf-c calls to allocate; `allocator_data` is the header.
        var allocator: ProtobufCAllocator
        /// The most bytes protobuf-c may take through `allocator` (``limitAllocations(to:)``).
        var limit: Int
        /// Whether an allocation was refused for going past `limit`.
        var refused: Bool
        /// The size words stored before protobuf-c's allocations (not counted in ``used``).
        var bookkeeping: Int
        /// ``SmallString/isAvailable``, read once per arena instead of once per string.
        var smallStrings: Bool
        /// The descriptors of ``watchFreedMessages(of:)`` (nil: none), and how many there are.
        var watched: UnsafePointer<UInt>?
        var watchedCount: Int
        /// Whether protobuf-c freed a message of a watched type.
        var freedWatched: Bool
    }

    static let chunkSize = 8192
    private static let headerSize = (MemoryLayout<Header>.size + 15) & ~15
    /// Link word at the start of extra chunks.
    private static let linkSize = 16

    private let header: UnsafeMutablePointer<Header>

    /// Takes a cached chunk or allocates one.
    init() {
        let chunk = Self.takeCached() ?? UnsafeMutableRawPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        header = chunk.bindMemory(to: Header.self, capacity: 1)
        header.initialize(
            to: Header(
                cursor: chunk + Self.headerSize, end: chunk + Self.chunkSize, start: chunk + Self.headerSize,
                retired: 0, extra: nil, maps: nil,
                allocator: ProtobufCAllocator(alloc: arenaAlloc, free: arenaFree, allocator_data: chunk),
                limit: .max, refused: false, bookkeeping: 0, smallStrings: SmallString.isAvailable, watched: nil,
                watchedCount: 0, freedWatched: false))
    }

    fileprivate init(header: UnsafeMutableRawPointer) {
        self.header = header.assumingMemoryBound(to: Header.self)
    }

    /// Frees every allocation at once; the arena must not be used afterwards.
    func release() {
        var extra = header.pointee.extra
        while let block = extra {
            extra = block.load(as: UnsafeMutableRawPointer?.self)
            block.deallocate()
        }
        let chunk = UnsafeMutableRawPointer(header)
        if !Self.putCached(chunk) { chunk.deallocate() }
    }

    /// The allocator to hand protobuf-c; valid until `release()`.
    var allocator: UnsafeMutablePointer<ProtobufCAllocator> {
        UnsafeMutableRawPointer(header).advanced(by: MemoryLayout<Header>.offset(of: \Header.allocator)!)
            .assumingMemoryBound(to: ProtobufCAllocator.self)
    }

    /// Makes protobuf-c's allocations fail (so the unpack fails) once they would pass `bytes`.
    func limitAllocations(to bytes: Int) { header.pointee.limit = bytes }

    /// Whether strings may be copied through ``SmallString`` (see ``SmallString/isAvailable``).
    var smallStrings: Bool { header.pointee.smallStrings }

    /// Whether protobuf-c asked for more than the limit.
    var refusedAllocation: Bool { header.pointee.refused }

    /// Notes when protobuf-c frees, while unpacking, a message of one of the types in
    /// `descriptors` (pairs of a descriptor's address and its `sizeof_message`; the buffer must
    /// outlive the arena). protobuf-c frees a message it has unpacked only when it replaces it: a
    /// singular message field or oneof member sent again (``SubmessageMerge``), or a failed unpack.
    func watchFreedMessages(of descriptors: UnsafeBufferPointer<UInt>) {
        header.pointee.watched = descriptors.baseAddress
        header.pointee.watchedCount = descriptors.count / 2
    }

    /// Whether protobuf-c freed a message of a type given to ``watchFreedMessages(of:)``.
    var freedWatchedMessage: Bool { header.pointee.freedWatched }

    /// Called for each of protobuf-c's frees. A freed message has its type's size and starts with
    /// its descriptor's address, which protobuf-c 1.4 clears first. Another block that looks
    /// the same (a string of that size starting with 8 NUL bytes) costs only a rewrite.
    fileprivate func noteFree(_ pointer: UnsafeMutableRawPointer) {
        guard let watched = header.pointee.watched else { return }
        let size = UInt(bitPattern: Self.unpackedSize(pointer))
        guard size >= UInt(MemoryLayout<UInt>.size) else { return }
        let first = pointer.load(as: UInt.self)
        for index in 0..<header.pointee.watchedCount where watched[2 * index + 1] == size {
            if first == 0 || first == watched[2 * index] {
                header.pointee.freedWatched = true
                return
            }
        }
    }

    /// `size` bytes for protobuf-c, after a word holding `size` (``unpackedSize(_:)``), or nil
    /// past the limit.
    @inline(__always)
    fileprivate func allocateForProtobufC(_ size: Int) -> UnsafeMutableRawPointer? {
        guard admits(size) else { return nil }
        let block = allocate(size &+ 8)
        block.storeBytes(of: size, as: Int.self)
        header.pointee.bookkeeping &+= 8
        return block + 8
    }

    /// Whether `size` more bytes stay within the limit; records a refusal when not.
    fileprivate func admits(_ size: Int) -> Bool {
        let (total, overflow) = used.addingReportingOverflow(size)
        guard overflow || total > header.pointee.limit else { return true }
        header.pointee.refused = true
        return false
    }

    /// The bytes handed out so far (sizes rounded up to 8).
    var used: Int {
        header.pointee.retired + (header.pointee.cursor - header.pointee.start) - header.pointee.bookkeeping
    }

    /// `size` uninitialised bytes aligned to 8.
    @inline(__always)
    func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        let rounded = (size + 7) & ~7
        let cursor = header.pointee.cursor
        if rounded <= header.pointee.end - cursor {
            header.pointee.cursor = cursor + rounded
            return cursor
        }
        return Self.allocateSlow(header, rounded)
    }

    private static func allocateSlow(_ header: UnsafeMutablePointer<Header>, _ size: Int) -> UnsafeMutableRawPointer {
        if size > chunkSize / 4 {
            let block = UnsafeMutableRawPointer.allocate(byteCount: linkSize + size, alignment: 16)
            block.storeBytes(of: header.pointee.extra, as: UnsafeMutableRawPointer?.self)
            header.pointee.extra = block
            header.pointee.retired += size
            return block + linkSize
        }
        let chunk = UnsafeMutableRawPointer.allocate(byteCount: chunkSize, alignment: 16)
        chunk.storeBytes(of: header.pointee.extra, as: UnsafeMutableRawPointer?.self)
        header.pointee.extra = chunk
        header.pointee.retired += header.pointee.cursor - header.pointee.start
        header.pointee.start = chunk + linkSize
        header.pointee.cursor = chunk + linkSize + size
        header.pointee.end = chunk + chunkSize
        return chunk + linkSize
    }

    /// One map field written into an encoded message: the C message holding it and the field.
    private struct MapRecord {
        var next: UnsafeMutableRawPointer?
        var base: UnsafeMutableRawPointer
        var owner: Unmanaged<MessagePlan>
        var index: Int
    }

    /// Records that the map `field` of the message at `base` was written (sorted before packing).
    func addMap(_ base: UnsafeMutableRawPointer, _ field: FieldPlan) {
        let record = allocate(MemoryLayout<MapRecord>.size)
        record.initializeMemory(
            as: MapRecord.self,
            repeating: MapRecord(next: header.pointee.maps, base: base, owner: field.ownerRef, index: field.index),
            count: 1)
        header.pointee.maps = record
    }

    /// Calls `body` for every map field recorded with ``addMap(_:_:)``.
    func forEachMap(_ body: (UnsafeMutableRawPointer, FieldPlan) -> Void) {
        var next = header.pointee.maps
        while let record = next?.assumingMemoryBound(to: MapRecord.self) {
            body(record.pointee.base, record.pointee.owner._withUnsafeGuaranteedRef { $0.fields[record.pointee.index] })
            next = record.pointee.next
        }
    }

    var hasMaps: Bool { header.pointee.maps != nil }

    // A few released first chunks, kept for the next arenas (0: empty slot).
    private static let slot0 = Atomic<UInt>(0)
    private static let slot1 = Atomic<UInt>(0)
    private static let slot2 = Atomic<UInt>(0)
    private static let slot3 = Atomic<UInt>(0)

    private static func takeCached() -> UnsafeMutableRawPointer? {
        var bits = slot0.exchange(0, ordering: .acquiring)
        if bits == 0 { bits = slot1.exchange(0, ordering: .acquiring) }
        if bits == 0 { bits = slot2.exchange(0, ordering: .acquiring) }
        if bits == 0 { bits = slot3.exchange(0, ordering: .acquiring) }
        return UnsafeMutableRawPointer(bitPattern: bits)
    }

    private static func putCached(_ chunk: UnsafeMutableRawPointer) -> Bool {
        let bits = UInt(bitPattern: chunk)
        return slot0.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged
            || slot1.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged
            || slot2.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged
            || slot3.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged
    }
}

/// protobuf-c's allocation callback: bump-allocates in the arena whose header is `data`, with
/// the size asked for in the word before the allocation (``unpackedSize(_:)``).
private let arenaAlloc: @convention(c) (UnsafeMutableRawPointer?, Int) -> UnsafeMutableRawPointer? = { data, size in
    Arena(header: data!).allocateForProtobufC(size)
}

extension Arena {
    /// The size protobuf-c asked for when it allocated `pointer` while unpacking (a string's is
    /// its wire length + 1: protobuf-c copies the bytes and adds a NUL). Only for pointers
    /// protobuf-c allocated through a decode arena.
    @inline(__always)
    static func unpackedSize(_ pointer: UnsafeRawPointer) -> Int {
        pointer.load(fromByteOffset: -8, as: Int.self)
    }
}

/// protobuf-c's free callback: frees nothing (the arena frees everything at once), only notes
/// the messages ``Arena/watchFreedMessages(of:)`` asks for.
private let arenaFree: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = {
    data, pointer in
    guard let data, let pointer else { return }
    Arena(header: data).noteFree(pointer)
}

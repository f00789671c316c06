/// The size of libcurl's receive buffer (`CURLOPT_BUFFERSIZE`) for each transfer, learned per
/// origin the way Netty's and SwiftNIO's adaptive receive allocators learn it per channel.
///
/// libcurl allocates the buffer when a transfer starts and frees it when the transfer ends,
/// so every request in flight holds one: at libcurl's default of 16 KiB it was the largest
/// part of the memory of a small request (1,000 GETs of a 1 KB body in flight: ~25 KiB of
/// resident memory per request; with 2 KiB buffers ~20 KiB). A small buffer costs reads for a
/// large body, though: a 10 MB body read 2 KiB at a time took about twice the CPU of 16 KiB
/// reads (each read is a `recv` and a write callback).
///
/// So transfers start at 2 KiB, enough for a typical API answer (16 KiB to an https origin, which
/// may answer in HTTP/2: `minimumHTTPS`); an origin whose body needed
/// more than one read gets a buffer that holds such a body (the next power of two, `maximum` at
/// most) from its next transfer on, and goes back down one step after `shrinkAfter` transfers
/// in a row whose bodies a quarter of the buffer would have held.
/// Streams (large downloads, as a rule) read up to `streaming` bytes at a time: each read is a
/// `recv`, a write callback and, when the reader waits, a hand-over to its task, so 16 KiB
/// reads of a 100 MB download cost about 5,000 context switches. Used on the transport's
/// thread only.
struct ReceiveBufferSizes {
    /// Where a transfer goes: responses from one origin tend to have alike sizes.
    struct Origin: Hashable {
        var authority: String
        var isHTTPS: Bool
    }

    private struct Entry {
        var size: Int
        /// Transfers in a row whose body fit in a quarter of `size`.
        var smallInARow: Int
    }

    /// The first size for an http origin; libcurl accepts 1 KiB and more.
    static let minimum = 2 << 10
    /// The first size for an https origin, which may answer in HTTP/2: libcurl 7.88 reads an
    /// HTTP/2 answer of unknown length (no Content-Length, as nginx's gzip sends) with a buffer
    /// smaller than a frame (16 KiB) to its last byte but does not see the stream end, and the
    /// transfer waited for its stall timeout or its timeout.
    static let minimumHTTPS = 16 << 10

    /// The first (and smallest) size for `origin`.
    static func minimum(for origin: Origin) -> Int { origin.isHTTPS ? minimumHTTPS : minimum }
    /// The largest learned size: an origin of large bodies is read 128 KiB at a time (the curl
    /// tool reads 100 KiB). At libcurl's default of 16 KiB, 32 transfers of 1 MB bodies took
    /// about 0.6× the curl tool's time: one read of each ready socket per pass of the loop.
    static let maximum = 128 << 10
    /// A streamed transfer's buffer. Allocated per stream, not per request in flight; pages the
    /// socket never fills are not touched.
    static let streaming = 256 << 10
    /// libcurl's upload buffer (`CURLOPT_UPLOAD_BUFFERSIZE`), its default.
    static let upload = 64 << 10
    /// The upload buffer of a body of `largeUpload` bytes or more, or of unknown length: one
    /// read callback and one `send` move up to this much (libcurl's default of 64 KiB made a
    /// 100 MB upload 1,600 of each, and as many progress reports).
    static let largeUploadBuffer = 512 << 10
    /// From this body size on, uploads get `largeUploadBuffer`.
    static let largeUpload: Int64 = 1 << 20
    /// Small transfers in a row before the size goes down one step.
    static let shrinkAfter = 32
    /// Origins remembered (those at the minimum are not kept).
    static let capacity = 256

    private var entries: [Origin: Entry] = [:]

    /// The buffer size for the next transfer to `origin`.
    func size(for origin: Origin) -> Int { entries[origin]?.size ?? Self.minimum(for: origin) }

    /// Learns from a transfer that ended.
    /// - Parameters:
    ///   - origin: where it went.
    ///   - bodyBytes: the bytes of its body (after content decoding).
    ///   - size: the buffer size it had.
    mutating func record(_ origin: Origin, bodyBytes: Int64, size: Int) {
        let minimum = Self.minimum(for: origin)
        var entry = entries[origin] ?? Entry(size: minimum, smallInARow: 0)
        if bodyBytes > Int64(size) {
            let fitting =
                bodyBytes >= Int64(Self.maximum) ? Self.maximum : 1 << (64 - (Int(bodyBytes) - 1).leadingZeroBitCount)
            entry = Entry(size: Swift.max(entry.size, Swift.min(Self.maximum, fitting)), smallInARow: 0)
        } else if bodyBytes <= Int64(entry.size / 4) {
            entry.smallInARow += 1
            if entry.smallInARow >= Self.shrinkAfter {
                entry = Entry(size: Swift.max(minimum, entry.size / 2), smallInARow: 0)
            }
        } else {
            entry.smallInARow = 0
        }
        guard entry.size > minimum else {
            entries.removeValue(forKey: origin)
            return
        }
        if entries[origin] == nil, entries.count >= Self.capacity {
            // Rarely reached: forget the others rather than grow without bound.
            entries.removeAll(keepingCapacity: true)
        }
        entries[origin] = entry
    }
}

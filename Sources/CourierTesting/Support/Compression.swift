import CZlib
import Foundation

/// gzip and zlib ("deflate") encoding with the system zlib.
enum Compression {
    /// gzip-wrapped DEFLATE (window bits 31).
    static func gzip(_ data: Data) -> Data {
        compress(windowBits: 31, level: Z_DEFAULT_COMPRESSION, strategy: Z_DEFAULT_STRATEGY, flush: Z_FINISH, data)
    }

    /// zlib-wrapped DEFLATE, what HTTP calls `deflate` (window bits 15).
    static func zlib(_ data: Data) -> Data {
        compress(windowBits: 15, level: Z_DEFAULT_COMPRESSION, strategy: Z_DEFAULT_STRATEGY, flush: Z_FINISH, data)
    }

    /// DEFLATE without a wrapper (window bits -15): what some servers send as `deflate`.
    static func rawDeflate(_ data: Data) -> Data {
        compress(windowBits: -15, level: Z_DEFAULT_COMPRESSION, strategy: Z_DEFAULT_STRATEGY, flush: Z_FINISH, data)
    }

    /// A gzip stream that inflates to `count` zero bytes, built without holding or compressing
    /// them all.
    ///
    /// One MiB of zeros is deflated once, ending in a full flush (byte-aligned, no back
    /// references across it), so that segment can simply be repeated; a final segment holds the
    /// remainder. The CRC of the whole is combined from the block's CRC.
    static func gzipZeros(count: Int) -> Data {
        let blockSize = 1 << 20
        let zeros = Data(count: blockSize)
        let segment = compress(windowBits: -15, level: 9, strategy: Z_RLE, flush: Z_FULL_FLUSH, zeros)
        let tail = compress(
            windowBits: -15, level: 9, strategy: Z_RLE, flush: Z_FINISH, zeros.prefix(count % blockSize))
        let blockCRC = uLong(crc32(zeros))
        var crc = uLong(crc32(Data()))
        for _ in 0..<(count / blockSize) { crc = crc32_combine(crc, blockCRC, off_t(blockSize)) }
        crc = crc32_combine(crc, uLong(crc32(zeros.prefix(count % blockSize))), off_t(count % blockSize))

        var output = Data([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3])
        output.reserveCapacity(10 + segment.count * (count / blockSize) + tail.count + 8)
        for _ in 0..<(count / blockSize) { output.append(segment) }
        output.append(tail)
        for value in [UInt32(truncatingIfNeeded: crc), UInt32(truncatingIfNeeded: count)] {
            withUnsafeBytes(of: value.littleEndian) { output.append(contentsOf: $0) }
        }
        return output
    }

    /// Deflates `data` in one call ending with `flush`.
    private static func compress(windowBits: Int32, level: Int32, strategy: Int32, flush: Int32, _ data: Data)
        -> Data
    {
        var stream = z_stream()
        let status = deflateInit2_(
            &stream, level, Z_DEFLATED, windowBits, 8, strategy, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "deflateInit2 failed: \(status)")
        defer { deflateEnd(&stream) }
        var output = Data()
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        // Read-only access (zlib does not write through `next_in`): Foundation 6.3's
        // `withUnsafeMutableBytes` traps on an empty slice at the end of its storage
        // (`data.dropFirst(data.count)`).
        data.withUnsafeBytes { raw in
            stream.next_in = raw.baseAddress.map {
                UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self))
            }
            stream.avail_in = uInt(raw.count)
            while true {
                let result = scratch.withUnsafeMutableBytes { out in
                    stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                    stream.avail_out = uInt(out.count)
                    let result = deflate(&stream, flush)
                    output.append(contentsOf: out.prefix(out.count - Int(stream.avail_out)))
                    return result
                }
                if result == Z_STREAM_END || result == Z_STREAM_ERROR || result == Z_BUF_ERROR { break }
                if flush != Z_FINISH && stream.avail_out != 0 { break }
            }
        }
        return output
    }
}

extension Compression {
    /// Inflates a gzip or zlib stream (detected from its header); `nil` when it is corrupt or
    /// inflates past `limit` bytes.
    static func inflate(_ data: Data, limit: Int = 1 << 30) -> Data? {
        var stream = z_stream()
        guard inflateInit2_(&stream, 47, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return nil
        }
        defer { inflateEnd(&stream) }
        var output = Data()
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        return data.withUnsafeBytes { raw -> Data? in
            stream.next_in = raw.baseAddress.map {
                UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self))
            }
            stream.avail_in = uInt(raw.count)
            while true {
                let result = scratch.withUnsafeMutableBytes { out in
                    stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                    stream.avail_out = uInt(out.count)
                    let result = CZlib.inflate(&stream, Z_NO_FLUSH)
                    output.append(contentsOf: out.prefix(out.count - Int(stream.avail_out)))
                    return result
                }
                if output.count > limit { return nil }
                if result == Z_STREAM_END { return output }
                if result != Z_OK { return nil }
            }
        }
    }

    /// zlib's CRC-32 of `data`, as `/upload` reports it; pass the previous result as `seed` to
    /// continue a running checksum.
    static func crc32(_ data: Data, seed: UInt32 = 0) -> UInt32 {
        data.withUnsafeBytes { raw in
            UInt32(
                truncatingIfNeeded: CZlib.crc32(
                    uLong(seed), raw.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(raw.count)))
        }
    }
}

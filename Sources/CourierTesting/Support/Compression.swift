import CZlib
import Foundation

/// gzip and zlib ("deflate") encoding with the system zlib.
enum Compression {
    /// gzip-wrapped DEFLATE (window bits 31).
    static func gzip(_ data: Data) -> Data {
        compress(windowBits: 31, level: Z_DEFAULT_COMPRESSION, pieces: 1) { _ in data }
    }

    /// zlib-wrapped DEFLATE, what HTTP calls `deflate` (window bits 15).
    static func zlib(_ data: Data) -> Data {
        compress(windowBits: 15, level: Z_DEFAULT_COMPRESSION, pieces: 1) { _ in data }
    }

    /// A gzip stream that inflates to `count` zero bytes, built without holding them in memory.
    static func gzipZeros(count: Int) -> Data {
        let block = Data(count: 1 << 20)
        let pieces = (count + block.count - 1) / block.count
        return compress(windowBits: 31, level: 9, pieces: pieces) { index in
            index == pieces - 1 && count % block.count != 0 ? block.prefix(count % block.count) : block
        }
    }

    /// Deflates the concatenation of `pieces` inputs produced by `input`.
    private static func compress(windowBits: Int32, level: Int32, pieces: Int, input: (Int) -> Data) -> Data {
        var stream = z_stream()
        let status = deflateInit2_(
            &stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
            Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "deflateInit2 failed: \(status)")
        defer { deflateEnd(&stream) }
        var output = Data()
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        for index in 0..<max(pieces, 1) {
            var piece = pieces == 0 ? Data() : input(index)
            let flush = index >= pieces - 1 ? Z_FINISH : Z_NO_FLUSH
            piece.withUnsafeMutableBytes { raw in
                stream.next_in = raw.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.avail_in = uInt(raw.count)
                while true {
                    let result = scratch.withUnsafeMutableBytes { out in
                        stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                        stream.avail_out = uInt(out.count)
                        let result = deflate(&stream, flush)
                        output.append(contentsOf: out.prefix(out.count - Int(stream.avail_out)))
                        return result
                    }
                    if result == Z_STREAM_END || result == Z_STREAM_ERROR { break }
                    if flush != Z_FINISH && stream.avail_out != 0 { break }
                }
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
        var input = data
        return input.withUnsafeMutableBytes { raw -> Data? in
            stream.next_in = raw.baseAddress?.assumingMemoryBound(to: Bytef.self)
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

    /// zlib's CRC-32 of `data`, as `/upload` reports it.
    static func crc32(_ data: Data) -> UInt32 {
        data.withUnsafeBytes { raw in
            UInt32(
                truncatingIfNeeded: CZlib.crc32(
                    0, raw.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(raw.count)))
        }
    }
}

import CZlib
import Foundation

/// Inflates a response body's `gzip` and `deflate` content codings as it arrives, and says at
/// the end whether every coding ended where its format says.
///
/// Courier decodes rather than libcurl: libcurl 7.88 never checks that a compressed stream
/// reached its end, so a complete HTTP message whose gzip body stopped half-way was handed out
/// (and cached) as a whole answer. Like OkHttp's `GzipSource` and NIO's decompressor, a body
/// that is truncated, fails its check value (CRC-32 and size for gzip, Adler-32 for zlib), or
/// has bytes after its end is an error.
///
/// Used by one transfer on the transport's thread.
final class ContentDecoder {
    /// A coding Courier decodes.
    enum Coding: Equatable {
        /// RFC 1952, also `x-gzip`; members may follow one another.
        case gzip
        /// RFC 1950 (zlib); a raw RFC 1951 stream is accepted too, as browsers and libcurl do.
        case deflate
    }

    /// The most codings one body may stack, as libcurl allowed (it stopped at 5).
    static let maxLayers = 5

    /// The `Accept-Encoding` Courier sends when the caller set none.
    static let offered = "gzip, deflate"

    /// The codings named by `Content-Encoding` values, in the order they were applied
    /// (`identity` dropped).
    /// - Throws: `CourierError.invalidResponse` for a coding Courier does not decode, or more
    ///   than `maxLayers`.
    static func codings(_ values: [String]) throws(CourierError) -> [Coding] {
        var codings: [Coding] = []
        for value in values {
            for token in value.split(separator: ",") {
                let name = token.trimmingCharacters(in: .whitespaces).lowercased()
                switch name {
                case "gzip", "x-gzip": codings.append(.gzip)
                case "deflate": codings.append(.deflate)
                case "identity", "": continue
                default:
                    throw CourierError(
                        .invalidResponse,
                        "the response has Content-Encoding \(name.prefix(40)), which Courier did not offer "
                            + "and does not decode (it offers \(offered))")
                }
            }
        }
        guard codings.count <= maxLayers else {
            throw CourierError(
                .invalidResponse, "the response stacks \(codings.count) content codings, more than \(maxLayers)")
        }
        return codings
    }

    /// The first transfer coding in `values` other than `chunked` (which libcurl takes off), or
    /// nil. Courier sends no `TE`, so a server may apply no other (RFC 9112 §7.4), and neither
    /// libcurl nor Courier decodes one: the bytes would be handed out as the content still coded.
    /// So is the coding after a `chunked` that is not last (RFC 9112 §6.3 frames such a body by
    /// the connection's close, libcurl by its chunks).
    static func undecodedTransferCoding(_ values: [String]) -> String? {
        for value in values {
            for token in value.split(separator: ",") {
                let name = token.trimmingCharacters(in: .whitespaces).lowercased()
                if name != "chunked", name != "identity", !name.isEmpty { return name }
            }
        }
        return nil
    }

    /// One inflater per coding, the last applied first.
    private let layers: [Inflater]

    /// - Parameter codings: non-empty, in the order they were applied.
    init(codings: [Coding]) throws(CourierError) {
        var layers: [Inflater] = []
        for coding in codings.reversed() { layers.append(try Inflater(coding)) }
        self.layers = layers
    }

    /// Inflates `input` (bytes off the wire), handing each decoded piece to `output`.
    /// - Throws: `CourierError.invalidResponse` for a corrupt stream, or what `output` throws.
    func decode(
        _ input: UnsafeRawBufferPointer, into output: (UnsafeRawBufferPointer) throws(CourierError) -> Void
    ) throws(CourierError) {
        try feed(layer: 0, input, output)
    }

    private func feed(
        layer: Int, _ input: UnsafeRawBufferPointer,
        _ output: (UnsafeRawBufferPointer) throws(CourierError) -> Void
    ) throws(CourierError) {
        guard layer + 1 < layers.count else {
            try layers[layer].inflate(input, into: output)
            return
        }
        try layers[layer].inflate(input) { (piece) throws(CourierError) in
            try feed(layer: layer + 1, piece, output)
        }
    }

    /// Whether any body byte came: an empty body (a `Content-Length: 0` answer labelled gzip)
    /// is an empty body, as libcurl and browsers take it, not a truncated stream.
    var hasInput: Bool { layers[0].hasInput }

    /// Checks that every coding reached its end once the body is complete.
    /// - Throws: `CourierError.invalidResponse` when one stopped early.
    func finish() throws(CourierError) {
        guard hasInput else { return }
        for layer in layers where !layer.isAtEnd {
            throw CourierError(
                .invalidResponse,
                "the \(layer.coding) response body ends before its compressed stream does (truncated)")
        }
    }
}

/// One zlib inflate stream.
private final class Inflater {
    let coding: ContentDecoder.Coding
    /// zlib keeps a pointer back to its `z_stream` and refuses one that moved: it lives here.
    private let stream: UnsafeMutablePointer<z_stream>
    private let scratch: UnsafeMutableRawPointer
    private static let scratchSize = 32 << 10
    private(set) var isAtEnd = false
    private(set) var hasInput = false
    /// For `deflate`: whether a raw DEFLATE stream (no zlib header) was tried after the header
    /// check failed on the first bytes.
    private var isRaw = false
    /// For `deflate`: a first byte that came alone, held until the next one, so that the zlib
    /// header is checked on both its bytes and raw DEFLATE can start again from the first.
    private var heldByte: UInt8?

    init(_ coding: ContentDecoder.Coding) throws(CourierError) {
        self.coding = coding
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        scratch = .allocate(byteCount: Self.scratchSize, alignment: 16)
        // 15 + 16: gzip only; 15: zlib only.
        let bits: Int32 = coding == .gzip ? 31 : 15
        guard inflateInit2_(stream, bits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            stream.deallocate()
            scratch.deallocate()
            throw CourierError(.transport, "zlib could not start an inflate stream (out of memory)")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
        scratch.deallocate()
    }

    func inflate(
        _ input: UnsafeRawBufferPointer, into output: (UnsafeRawBufferPointer) throws(CourierError) -> Void
    ) throws(CourierError) {
        guard let base = input.baseAddress, input.count > 0 else { return }
        if coding == .deflate, !isRaw {
            // zlib takes a lone first byte into its header and cannot give it back, and the
            // header check on the second byte would fail where a raw stream is no longer tried.
            if let held = heldByte {
                heldByte = nil
                hasInput = false
                let joined = UnsafeMutableRawBufferPointer.allocate(byteCount: input.count + 1, alignment: 1)
                defer { joined.deallocate() }
                joined[0] = held
                joined.baseAddress!.advanced(by: 1).copyMemory(from: base, byteCount: input.count)
                try inflate(UnsafeRawBufferPointer(joined), into: output)
                return
            }
            if !hasInput, input.count == 1 {
                heldByte = input[0]
                hasInput = true
                return
            }
        }
        var next = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        var left = input.count
        let firstBytes = !hasInput
        hasInput = true
        while left > 0 {
            if isAtEnd {
                // Bytes after the end: another gzip member may follow (RFC 1952 §2.2);
                // anything else is not part of the body.
                guard coding == .gzip, next[0] == 0x1F else { throw trailing() }
                inflateReset(stream)
                isAtEnd = false
            }
            stream.pointee.next_in = next
            stream.pointee.avail_in = UInt32(Swift.min(left, Int(UInt32.max)))
            let given = Int(stream.pointee.avail_in)
            var status: Int32
            repeat {
                stream.pointee.next_out = scratch.assumingMemoryBound(to: UInt8.self)
                stream.pointee.avail_out = UInt32(Self.scratchSize)
                status = CZlib.inflate(stream, Z_NO_FLUSH)
                let produced = Self.scratchSize - Int(stream.pointee.avail_out)
                if produced > 0 { try output(UnsafeRawBufferPointer(start: scratch, count: produced)) }
            } while status == Z_OK && (stream.pointee.avail_out == 0 || stream.pointee.avail_in > 0)
            let used = given - Int(stream.pointee.avail_in)
            switch status {
            case Z_STREAM_END:
                isAtEnd = true
            case Z_OK, Z_BUF_ERROR:
                // All input taken, more is needed; zlib taking none of it would loop forever.
                guard used > 0 else { throw corrupt() }
            case Z_DATA_ERROR where coding == .deflate && firstBytes && !isRaw && stream.pointee.total_out == 0:
                // `deflate` sent as raw DEFLATE, without the zlib wrapper: start again as that.
                isRaw = true
                guard inflateReset2(stream, -15) == Z_OK else { throw corrupt() }
                continue
            case Z_MEM_ERROR:
                throw CourierError(.transport, "zlib ran out of memory inflating the response body")
            default:
                throw corrupt()
            }
            next += used
            left -= used
        }
    }

    private func corrupt() -> CourierError {
        let reason = stream.pointee.msg.map { String(cString: $0) } ?? "corrupt data"
        return CourierError(.invalidResponse, "the \(coding) response body is corrupt (\(reason))")
    }

    private func trailing() -> CourierError {
        CourierError(.invalidResponse, "the \(coding) response body has bytes after the end of its compressed stream")
    }
}

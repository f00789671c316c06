@_spi(Fuzzing) import Courier
import Foundation
import FuzzSupport

// A disk-cache row is read back from a file another process (or another version, or a
// damaged disk) wrote. Decoding it must end in an entry or a rejected row, never a trap, and
// serving a decoded entry (Age, freshness, validators, 304 merge) must not trap either.
//
// Input layout: 1 flag byte, three 8-byte times, an 8-byte checksum (used only when flag bit 0
// is set; otherwise the right checksum is computed so decoding gets past it), the URL and the
// variant each ended by `\0`, a 2-byte head length, the head (CacheHeadCodec bytes), the body.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCacheEntry(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data: data, size: size)
    let flags = input.byte()
    // Times as small offsets from a fixed instant most of the time, raw bit patterns sometimes
    // (NaN, infinities and subnormals are what a damaged row can hold).
    func time() -> Double {
        let raw = input.u64()
        if flags & 4 != 0 { return Double(bitPattern: raw) }
        return 1_700_000_000 + Double(Int64(bitPattern: raw) % 1_000_000)
    }
    let times = (time(), time(), flags & 8 != 0 ? time() : .nan)
    let storedChecksum = input.u64()
    let url = String(decoding: input.field(until: 0), as: UTF8.self)
    let variant = String(decoding: input.field(until: 0), as: UTF8.self)
    let headLength = Int(input.u16())
    var head: [UInt8] = []
    for _ in 0..<headLength where !input.isAtEnd { head.append(input.byte()) }
    let body = Data(input.rest())
    _ = CacheFuzzing.decodeStoredRow(
        head: Data(head), body: body, url: url, variant: variant, times: times, hasQuery: flags & 2 != 0,
        checksum: flags & 1 != 0 ? storedChecksum : nil)
    return 0
}

@_spi(Fuzzing) import Courier
import FuzzSupport

// A response head is the first thing a hostile server controls: status line, field lines,
// obs-fold continuations, interim 1xx heads, trailers. The parser gets the bytes line by line
// as libcurl's header callback hands them over and must end in a head, a refusal or a
// "too large", never a trap; a head it builds holds no control byte, stays within the bounds,
// and its status is a three-digit code.
//
// Input layout: the raw head bytes; each line ends at `\n` (kept, as curl keeps it).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data: data, size: size)
    let bytes = input.rest()
    var lines: [[UInt8]] = []
    var start = 0
    for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
        lines.append(Array(bytes[start...index]))
        start = index + 1
    }
    if start < bytes.count { lines.append(Array(bytes[start...])) }

    let outcome = ResponseHeadFuzzing.parse(lines: lines)
    if let violation = outcome.violation { fatalError("response head invariant broken: \(violation)") }
    return 0
}

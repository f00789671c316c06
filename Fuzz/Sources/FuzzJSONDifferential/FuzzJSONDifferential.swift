import Courier
import Foundation
import FuzzSupport

// Differential fuzzing of Courier's fast JSON decoder against Foundation's `JSONDecoder`.
// Whatever the bytes: neither traps; and when both decode a document, they decode the same
// value (Courier is stricter in documented ways — trailing commas, up-front validation,
// UTF-8 only — so "only one of them fails" is not a finding, a different value is).

/// Any JSON value, decoded through the public `Decodable` containers only.
enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}

/// A typed model, so keyed containers, optionals and integer range checks are compared too.
struct Typed: Decodable, Equatable {
    var id: Int?
    var small: Int8?
    var big: UInt64?
    var ratio: Float?
    var name: String?
    var flags: [Bool]?
    var nested: [String: [Int]]?
}

/// How deep arrays and objects nest, brackets inside strings aside.
func nestingDepth(_ data: Data) -> Int {
    var depth = 0
    var deepest = 0
    var inString = false
    var escaped = false
    for byte in data {
        if inString {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
            }
            continue
        }
        switch byte {
        case UInt8(ascii: "\""): inString = true
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            depth += 1
            deepest = max(deepest, depth)
        case UInt8(ascii: "]"), UInt8(ascii: "}"): depth = max(0, depth - 1)
        default: break
        }
    }
    return deepest
}

/// Foundation is the oracle only where it is sound. Its JSONDecoder (6.3.1) traps on exactly 513
/// unclosed `[` (JSONError.SourceLocation at the end of the input) and needs about a second for a
/// valid document nested 512 deep (each failed `try?` in `JSONValue` builds the coding path
/// again), over the fuzzer's 10 s per input with ASan. Deeper documents go to Courier alone,
/// which must still neither trap nor hang on them (FuzzRegressionTests pins both inputs).
let oracleDepthLimit = 100

func compare<T: Decodable & Equatable>(_ type: T.Type, _ data: Data) {
    let ours = try? CourierJSONDecoder().decode(T.self, from: data)
    guard nestingDepth(data) <= oracleDepthLimit else { return }
    let theirs = try? JSONDecoder().decode(T.self, from: data)
    if let ours, let theirs, ours != theirs, String(describing: ours) != String(describing: theirs) {
        fatalError("Courier and Foundation decode differently:\n\(ours)\nvs\n\(theirs)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONDifferential(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data: data, size: size)
    let typed = input.flag()
    let body = Data(input.rest())
    if typed { compare(Typed.self, body) } else { compare(JSONValue.self, body) }
    return 0
}

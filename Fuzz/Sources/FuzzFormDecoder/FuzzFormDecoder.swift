import Courier
import Foundation
import FuzzSupport

// Form bodies are server input: whatever the bytes, decoding either yields a value or throws
// a `CourierError`, never traps, and a value that decoded re-encodes without trapping.

struct Address: Codable {
    var street: String
    var zip: Int?
    var tags: [String]?
}

struct Profile: Codable {
    var name: String?
    var age: Int?
    var score: Double?
    var active: Bool?
    var small: Int8?
    var unsigned: UInt?
    var addresses: [Address]?
    var home: Address?
    var meta: [String: String]?
    var matrix: [[Int]]?
    var created: Date?
    var blob: Data?
    var url: URL?
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFormDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data: data, size: size)
    let nesting: URLEncodedForm.NestingStyle = input.flag() ? .dots : .brackets
    let dates: [URLEncodedFormDecoder.DateDecodingStrategy] = [
        .deferredToDate, .secondsSince1970, .millisecondsSince1970, .iso8601,
    ]
    let decoder = URLEncodedFormDecoder(nesting: nesting, dates: dates[input.choice(dates.count)])
    let which = input.choice(4)
    let body = Data(input.rest())
    do {
        switch which {
        case 0:
            let profile = try decoder.decode(Profile.self, from: body)
            _ = try? URLEncodedFormEncoder().encode(profile)
        case 1: _ = try decoder.decode([String: String].self, from: body)
        case 2: _ = try decoder.decode([String: [String: [Int]]].self, from: body)
        default: _ = try decoder.decode([String: Address].self, fromQuery: String(decoding: body, as: UTF8.self))
        }
    } catch is CourierError {
        // The expected outcome for most inputs.
    } catch {
        fatalError("the form decoder threw a non-Courier error: \(error)")
    }
    return 0
}

import CourierTesting
import Foundation
import Testing

@testable import Courier
@testable import CourierTesting

/// A compressed body arrives in whatever pieces the network and libcurl make of it. Whether it
/// decodes, and to what, must not depend on where it was cut: round 18a found a raw DEFLATE body
/// refused when its first piece held one byte. Here seeded random bodies of every form Courier
/// decodes (gzip, several gzip members, zlib, raw DEFLATE, gzip inside deflate), whole or
/// damaged (cut short, a byte changed, bytes added after the end), are decoded in one piece and
/// in random cuts, down to one byte at a time: the outcomes must be the same.
@Suite struct ContentDecodingChunkingTests {
    enum Form: CaseIterable {
        case gzip, gzipMembers, zlib, raw, gzipInsideDeflate
    }

    static func encode(_ payload: Data, _ form: Form, _ random: inout SplitMix64) -> (Data, [ContentDecoder.Coding]) {
        switch form {
        case .gzip: return (Compression.gzip(payload), [.gzip])
        case .gzipMembers:
            let cut = payload.isEmpty ? 0 : Int.random(in: 0...payload.count, using: &random)
            return (Compression.gzip(payload.prefix(cut)) + Compression.gzip(payload.dropFirst(cut)), [.gzip])
        case .zlib: return (Compression.zlib(payload), [.deflate])
        case .raw: return (Compression.rawDeflate(payload), [.deflate])
        case .gzipInsideDeflate: return (Compression.zlib(Compression.gzip(payload)), [.gzip, .deflate])
        }
    }

    /// The decoded bytes, or nil when the decoder refused the body.
    static func decode(_ body: Data, codings: [ContentDecoder.Coding], cuts: [Int]) -> Data? {
        do {
            let decoder = try ContentDecoder(codings: codings)
            var decoded = Data()
            var start = 0
            for end in cuts + [body.count] where end > start {
                try body[start..<end].withUnsafeBytes { piece in
                    try decoder.decode(piece) { decoded.append(contentsOf: $0) }
                }
                start = end
            }
            try decoder.finish()
            return decoded
        } catch {
            return nil
        }
    }

    static func payload(_ random: inout SplitMix64) -> Data {
        let count = [0, 1, 2, 17, 300, 5_000, 70_000].randomElement(using: &random)!
        // Half the time text-like (long matches, back references), else noise.
        if Bool.random(using: &random) {
            let words = ["courier", "swift", " ", "\n", "{\"id\":", "42", "}"]
            var text = Data()
            while text.count < count { text.append(contentsOf: words.randomElement(using: &random)!.utf8) }
            return text.prefix(count)
        }
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) })
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func theOutcomeDoesNotDependOnWhereTheBodyIsCut(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        for round in 0..<40 {
            let payload = Self.payload(&random)
            let form = Form.allCases.randomElement(using: &random)!
            var (body, codings) = Self.encode(payload, form, &random)
            let damage = Int.random(in: 0..<4, using: &random)
            switch damage {
            case 1: body = body.prefix(Int.random(in: 0..<body.count, using: &random))
            case 2:
                let at = Int.random(in: 0..<body.count, using: &random)
                body[at] ^= UInt8.random(in: 1...255, using: &random)
            case 3: body.append(contentsOf: (0..<Int.random(in: 1...8, using: &random)).map { _ in UInt8(0x41) })
            default: break
            }
            let whole = Self.decode(body, codings: codings, cuts: [])
            if damage == 0 { #expect(whole == payload, "round \(round): \(form) did not decode whole") }
            var cuttings: [[Int]] = [Array(1..<max(1, min(body.count, 600)))]
            for _ in 0..<4 {
                var cuts: [Int] = []
                var at = 0
                while at < body.count {
                    at += [1, 1, 2, 3, 7, 64, 1_000, 20_000].randomElement(using: &random)!
                    cuts.append(min(at, body.count))
                }
                cuttings.append(cuts)
            }
            for cuts in cuttings {
                let pieces = Self.decode(body, codings: codings, cuts: cuts)
                let got = pieces.map { "\($0.count) bytes" } ?? "a refusal"
                let expected = whole.map { "\($0.count) bytes" } ?? "a refusal"
                #expect(
                    pieces == whole,
                    "round \(round): \(form), damage \(damage), \(body.count) bytes, cut at \(cuts.prefix(4))…: \(got), whole: \(expected)"
                )
            }
        }
    }
}

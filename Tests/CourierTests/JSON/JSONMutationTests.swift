import CourierTesting
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// A small, seeded mutation run over the corpus: flipped, dropped, duplicated and inserted
/// bytes. Courier must never crash and `JSONDifferential.compare(data:)` must never report
/// an undocumented difference. (The open-ended fuzz target is issue 8's; it reuses
/// `JSONDifferential.compare(data:)`.)
@Suite struct JSONMutationTests {
    static let interesting: [UInt8] =
        Array(#"{}[],:"\/0123456789-+.eEtrufalsn "#.utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC0, 0xED, 0xF4, 0xFF]

    static func mutate(_ bytes: [UInt8], _ generator: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            guard !bytes.isEmpty else { return Array("[".utf8) }
            let index = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: bytes[index] = interesting.randomElement(using: &generator)!
            case 1: bytes.remove(at: index)
            case 2: bytes.insert(interesting.randomElement(using: &generator)!, at: index)
            default: bytes = Array(bytes[..<index])
            }
        }
        return bytes
    }

    /// CPU-bound: runs on its own thread (`offPool`) so the parallel run's network tests keep
    /// the cooperative pool.
    @Test func mutatedCorpusNeverDisagreesUndocumented() async throws {
        let seeds = try JSONFixtures.files(in: "corpus").map { try [UInt8](JSONFixtures.data("corpus", $0)) }
            .filter { $0.count < 4096 }
        let mismatches = try await offPool {
            var generator = SplitMix64(seed: 0xC0FFEE)
            var found: [String] = []
            for round in 0..<2000 {
                let input = Data(Self.mutate(seeds[round % seeds.count], &generator))
                if case .mismatch(let reason) = JSONDifferential.compare(data: input) {
                    found.append("\(String(decoding: input, as: UTF8.self).debugDescription): \(reason.prefix(300))")
                }
            }
            return found
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }
}

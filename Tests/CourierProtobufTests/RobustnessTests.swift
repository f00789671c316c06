import CourierProtobuf
import CourierTesting
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// Hostile bytes: every truncation of every golden, and seeded random byte flips, decode to a
/// value or a `CourierError` — never a crash (and, under a leak checker, never a leak: the C
/// message is freed on every path).
@Suite struct RobustnessTests {
    static var cases: [(String, any (ProtobufMessage & Equatable).Type)] { GoldenTests.cases }

    private func attempt<T: ProtobufMessage>(_ type: T.Type, _ bytes: Data) -> Bool {
        do {
            _ = try ProtobufDecoder().decode(T.self, from: bytes)
            return true
        } catch let error as CourierError {
            return error.code == .decoding
        } catch {
            return false  // Only CourierError may escape.
        }
    }

    @Test(arguments: cases.map(\.0))
    func everyTruncationDecodesOrFails(_ name: String) throws {
        let type = Self.cases.first { $0.0 == name }!.1
        let bytes = try Fixtures.bytes(name)
        var failures = 0
        for length in 0..<bytes.count {
            if !attempt(type, bytes.prefix(length)) { failures += 1 }
        }
        #expect(failures == 0)
    }

    @Test(arguments: cases.map(\.0))
    func randomByteFlipsDecodeOrFail(_ name: String) throws {
        let type = Self.cases.first { $0.0 == name }!.1
        let bytes = try Fixtures.bytes(name)
        guard !bytes.isEmpty else { return }
        var generator = SplitMix64(seed: UInt64(name.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        var failures = 0
        for _ in 0..<300 {
            var mutated = bytes
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<mutated.count, using: &generator)
                mutated[index] = UInt8.random(in: 0...255, using: &generator)
            }
            if !attempt(type, mutated) { failures += 1 }
        }
        #expect(failures == 0)
    }

    @Test func decodedValuesReEncode() throws {
        // A flipped byte that still decodes must give a value that encodes again.
        let bytes = try Fixtures.bytes("demo_profile")
        var generator = SplitMix64(seed: 7)
        var decoded = 0
        for _ in 0..<300 {
            var mutated = bytes
            mutated[Int.random(in: 0..<mutated.count, using: &generator)] ^= UInt8.random(
                in: 1...255, using: &generator)
            guard let value = try? ProtobufDecoder().decode(UserProfile.self, from: mutated) else { continue }
            decoded += 1
            do {
                _ = try ProtobufEncoder().encode(value)
            } catch let error as CourierError {
                #expect(error.code == .encoding)  // e.g. -0.0 produced by a flip
            }
        }
        #expect(decoded > 0)
    }
}

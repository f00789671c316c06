import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// The decoder pool behind `CourierJSONDecoder`: decoders are reused across calls, and
/// whatever escapes a call (a decoder, a keyed or unkeyed container) throws afterwards
/// instead of reading another call's document.
@Suite struct JSONDecoderPoolTests {
    struct Point: Codable, Equatable {
        var x: Int
        var y: Int
    }

    struct Shape: Decodable {
        var name: String
        var points: [Point]
        var tags: [String]
        var origin: Point

        enum CodingKeys: String, CodingKey { case name, points, tags, origin }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            var unkeyed = try container.nestedUnkeyedContainer(forKey: .points)
            var points: [Point] = []
            while !unkeyed.isAtEnd { points.append(try unkeyed.decode(Point.self)) }
            self.points = points
            tags = try container.decode([String].self, forKey: .tags)
            origin = try Point(from: container.superDecoder(forKey: .origin))
        }
    }

    @Test func decodersGoBackToThePoolAfterEachCall() throws {
        let data = Data(
            #"{"name":"a","points":[{"x":1,"y":2},{"x":3,"y":4}],"tags":["t"],"origin":{"x":0,"y":0}}"#.utf8)
        let tally = JSONDecoderImpl.EscapeTally()
        try JSONDecoderImpl.$escapes.withValue(tally) {
            for _ in 0..<50 {
                let shape = try CourierJSONDecoder().decode(Shape.self, from: data)
                #expect(shape.points == [Point(x: 1, y: 2), Point(x: 3, y: 4)] && shape.origin == Point(x: 0, y: 0))
            }
        }
        // Counted for this loop's calls only (other suites' escapes are not in the tally).
        #expect(tally.count.load(ordering: .relaxed) < 50)
    }

    @Test func concurrentCallsDecodeTheirOwnDocuments() async throws {
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var mismatches = 0
                    for round in 0..<300 {
                        let x = task * 1000 + round
                        let text =
                            #"{"name":"n\#(x)","points":[{"x":\#(x),"y":\#(task)}],"tags":["\#(task)"],"origin":{"x":\#(round),"y":0}}"#
                        let shape = try CourierJSONDecoder().decode(Shape.self, from: Data(text.utf8))
                        if shape.name != "n\(x)" || shape.points != [Point(x: x, y: task)] || shape.tags != ["\(task)"]
                            || shape.origin != Point(x: round, y: 0)
                        {
                            mismatches += 1
                        }
                    }
                    return mismatches
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    final class KeptContainer: Decodable, @unchecked Sendable {
        // @unchecked: written during decoding, read after it, on one thread.
        nonisolated(unsafe) static var container: KeyedDecodingContainer<Shape.CodingKeys>?
        init(from decoder: any Decoder) throws {
            KeptContainer.container = try decoder.container(keyedBy: Shape.CodingKeys.self)
        }
    }

    @Test func aKeyedContainerUsedAfterItsCallThrows() throws {
        _ = try CourierJSONDecoder().decode(KeptContainer.self, from: Data(#"{"name":"first"}"#.utf8))
        // Another call, likely on the same pooled decoder.
        _ = try CourierJSONDecoder().decode(Point.self, from: Data(#"{"x":1,"y":2,"name":"second"}"#.utf8))
        let kept = try #require(KeptContainer.container)
        #expect(throws: DecodingError.self) { try kept.decode(String.self, forKey: .name) }
        #expect(throws: DecodingError.self) { try kept.decodeNil(forKey: .name) }
        #expect(throws: DecodingError.self) { try kept.superDecoder() }
        #expect(try kept.decodeIfPresent(String.self, forKey: .name) == nil)
        #expect(!kept.contains(.name) && kept.allKeys.isEmpty && kept.codingPath.isEmpty)
        KeptContainer.container = nil
    }

    final class KeptDecoder: Decodable, @unchecked Sendable {
        // @unchecked: written during decoding, read after it, on one thread.
        nonisolated(unsafe) static var decoder: (any Decoder)?
        init(from decoder: any Decoder) throws { KeptDecoder.decoder = decoder }
    }

    final class DecoderIdentity: Decodable, @unchecked Sendable {
        let identity: ObjectIdentifier
        init(from decoder: any Decoder) throws {
            identity = ObjectIdentifier(decoder as AnyObject)
            _ = try decoder.singleValueContainer().decode(Int.self)
        }
    }

    @Test func anEscapedDecoderIsNeverReused() throws {
        let tally = JSONDecoderImpl.EscapeTally()
        _ = try JSONDecoderImpl.$escapes.withValue(tally) {
            try CourierJSONDecoder().decode(KeptDecoder.self, from: Data("[1]".utf8))
        }
        #expect(tally.count.load(ordering: .relaxed) == 1)
        let kept = try #require(KeptDecoder.decoder)
        let keptIdentity = ObjectIdentifier(kept as AnyObject)
        for _ in 0..<20 {
            let other = try CourierJSONDecoder().decode(DecoderIdentity.self, from: Data("7".utf8))
            #expect(other.identity != keptIdentity)
        }
        #expect(throws: DecodingError.self) { try kept.unkeyedContainer() }
        KeptDecoder.decoder = nil
    }
}

import CProtobufC
import CourierProtos
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier
@testable import CourierProtobuf

/// Crafted bytes against the decoder's bounds: a length prefix longer than the input, a
/// message that unpacks into far more memory than its bytes, messages nested past the limit.
@Suite struct ProtobufLimitsTests {
    /// A varint.
    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        return bytes + [UInt8(value)]
    }

    /// A length-delimited field `number` whose prefix says `length` but is followed by `payload`.
    static func lying(field number: UInt64, length: UInt64, payload: [UInt8] = Array("abc".utf8)) -> Data {
        Data(varint(number << 3 | 2) + varint(length) + payload)
    }

    /// Decodes and returns the error and the bytes protobuf-c allocated.
    func decode<T: ProtobufMessage>(_ type: T.Type, _ data: Data, limits: ProtobufDecoder.Limits = .default)
        -> (CourierError?, Int)
    {
        var allocated = 0
        do {
            _ = try ProtobufDecoder(limits: limits).withUnpacked(
                data, descriptor: T.protobufDescriptor, type: T.self, allocated: &allocated
            ) { plan, message in
                try T(from: CMessageReader(plan: plan, focus: .message(message)))
            }
            return (nil, allocated)
        } catch let error as CourierError {
            return (error, allocated)
        } catch {
            Issue.record("not a CourierError: \(error)")
            return (nil, allocated)
        }
    }

    /// String, bytes, packed and sub-message fields whose prefix claims up to 2^63 bytes.
    @Test(arguments: [
        (10 as UInt64, "Repeated.strings"), (11, "Repeated.blobs"), (1, "Repeated.packed_int32"),
        (12, "Repeated.points"),
    ])
    func lengthPrefixLongerThanTheInputAllocatesNoMoreThanTheInput(_ field: UInt64, _ name: String) {
        let size = Repeated.protobufDescriptor.pointee.sizeof_message
        for length in [4, 1 << 20, 0x7FFF_FFFF, UInt64(Int64.max)] as [UInt64] {
            let data = Self.lying(field: field, length: length)
            let (error, allocated) = decode(Repeated.self, data)
            #expect(error?.code == .decoding, "\(name) length \(length)")
            // The message struct itself, then nothing of the claimed length: never more than the input.
            #expect(allocated <= size + data.count + 8, "\(name) length \(length): \(allocated) bytes")
        }
    }

    /// 100,000 empty `Point`s take 2 bytes each on the wire and far more unpacked.
    @Test func allocationLimitRefusesAMessageThatUnpacksPastIt() throws {
        let data = Data(Array(repeating: [0x62, 0x00] as [UInt8], count: 100_000).joined())
        let (unlimited, allocated) = decode(Repeated.self, data)
        #expect(unlimited == nil)
        #expect(allocated > 10 * data.count, "unpacks to \(allocated) bytes")

        let limits = ProtobufDecoder.Limits(maxAllocationBytes: 1 << 20)
        let (error, refused) = decode(Repeated.self, data, limits: limits)
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("allocation limit") == true)
        #expect(refused <= 1 << 20)
        // The public entry point applies the same limit.
        #expect(throws: CourierError.self) { try ProtobufDecoder(limits: limits).decode(Repeated.self, from: data) }
        #expect(try ProtobufDecoder().decode(Repeated.self, from: data).points.count == 100_000)
    }

    @Test func messagesNestedPastTheDepthLimitAreRefused() throws {
        // Choice.origin (field 5) is a Point: depth 2.
        let point = Self.varint(1 << 3) + Self.varint(4)
        let nested = Data(Self.varint(5 << 3 | 2) + Self.varint(UInt64(point.count)) + point)
        let flat = Data(Self.varint(1 << 3) + Self.varint(7))
        let shallow = ProtobufDecoder(limits: .init(maxDepth: 1))
        #expect(try shallow.decode(Choice.self, from: flat).number == 7)
        let error = #expect(throws: CourierError.self) { try shallow.decode(Choice.self, from: nested) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("deeper than 1") == true)
        #expect(try ProtobufDecoder(limits: .init(maxDepth: 2)).decode(Choice.self, from: nested).origin?.x == 2)

        // Maps.points_by_id: entry message, then Point: depth 3.
        let entry = Self.varint(2 << 3 | 2) + Self.varint(UInt64(point.count)) + point
        let map = Data(Self.varint(2 << 3 | 2) + Self.varint(UInt64(entry.count)) + entry)
        #expect(throws: CourierError.self) {
            try ProtobufDecoder(limits: .init(maxDepth: 2)).decode(Maps.self, from: map)
        }
        #expect(try ProtobufDecoder(limits: .init(maxDepth: 3)).decode(Maps.self, from: map).pointsById.count == 1)
    }

    @Test func schemaDepthsAndClampedLimits() throws {
        #expect(NestingLimit.schemaDepth(Point.protobufDescriptorForTests) == 1)
        #expect(NestingLimit.schemaDepth(Choice.protobufDescriptor) == 2)
        #expect(NestingLimit.schemaDepth(Maps.protobufDescriptor) == 3)
        #expect(ProtobufDecoder.Limits(maxDepth: 0).maxDepth == 1)
        #expect(ProtobufDecoder.Limits(maxDepth: 100_000).maxDepth == 200)
        #expect(ProtobufDecoder.Limits(maxAllocationBytes: -1).maxAllocationBytes == 4096)
        #expect(ProtobufDecoder.Limits.default == .init(maxDepth: 100, maxAllocationBytes: 64 << 20))
    }
}

extension Point {
    static var protobufDescriptorForTests: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Point()
    }
}

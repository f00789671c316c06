// One protobuf path, N decode + encode round trips of the benchmark's catalog, for profiling
// with callgrind (instructions per round trip: run two counts and difference them):
//
//   courier-protobuf-bench PATH ITERATIONS [--time]
//
// PATH is `model` (Courier's generated model, ProtobufDirectCodable), `raw` (protobuf-c unpack
// + pack in C), `swift-protobuf` or `codable` (Courier's Codable model). The same work as the
// package-benchmark suite's "Protobuf decode+encode" benchmarks, without its harness. With
// `--time`, each round trip is timed on its own and the fastest and median are printed (µs), as
// package-benchmark reports them.
import BenchSupport
import CBenchRaw
import CourierProtobuf
import Foundation
import SwiftProtobuf

@inline(never)
func sink<T>(_ value: T) { withExtendedLifetime(value) {} }

/// Nanoseconds on the monotonic clock.
@inline(__always)
func now() -> UInt64 {
    var clock = timespec()
    clock_gettime(CLOCK_MONOTONIC, &clock)
    return UInt64(clock.tv_sec) &* 1_000_000_000 &+ UInt64(clock.tv_nsec)
}

/// Runs `body` `iterations` times; with `timed`, returns each run's nanoseconds.
@inline(__always)
func repeatRoundTrip(_ iterations: Int, timed: Bool, _ body: () throws -> Int) rethrows -> (Int, [UInt64]) {
    var total = 0
    var samples: [UInt64] = []
    samples.reserveCapacity(timed ? iterations : 0)
    for _ in 0..<iterations {
        if timed {
            let start = now()
            total &+= try body()
            samples.append(now() &- start)
        } else {
            total &+= try body()
        }
    }
    return (total, samples)
}

/// The bytes written by `iterations` round trips of `path`, and their timings.
func run(_ path: String, _ iterations: Int, timed: Bool) throws -> (Int, [UInt64])? {
    let bytes = Catalog.protobufBody
    let data = Data(bytes)
    let decoder = ProtobufDecoder()
    let encoder = ProtobufEncoder()
    let out = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 4096)
    defer { out.deallocate() }
    switch path {
    case "raw":
        return repeatRoundTrip(iterations, timed: timed) {
            let written = bytes.withUnsafeBufferPointer { input in
                cbench_roundtrip(input.baseAddress, input.count, out.baseAddress, out.count)
            }
            sink(written)
            return written
        }
    case "model":
        return try repeatRoundTrip(iterations, timed: timed) {
            let model = try decoder.decode(GeneratedCatalog.self, from: data)
            let encoded = try encoder.encode(model)
            sink(encoded)
            return encoded.count
        }
    case "codable":
        return try repeatRoundTrip(iterations, timed: timed) {
            let model = try decoder.decode(Catalog.self, from: data)
            let encoded = try encoder.encode(model)
            sink(encoded)
            return encoded.count
        }
    case "swift-protobuf":
        return try repeatRoundTrip(iterations, timed: timed) {
            let message = try Courier_Bench_Catalog(serializedBytes: bytes)
            let encoded: [UInt8] = try message.serializedBytes()
            sink(encoded)
            return encoded.count
        }
    default:
        return nil
    }
}

let arguments = CommandLine.arguments
let timed = arguments.count == 4 && arguments[3] == "--time"
guard arguments.count == 3 || timed, let iterations = Int(arguments[2]), iterations > 0,
    let (total, samples) = try run(arguments[1], iterations, timed: timed)
else {
    FileHandle.standardError.write(
        Data("usage: courier-protobuf-bench model|raw|swift-protobuf|codable N [--time]\n".utf8))
    exit(2)
}
precondition(total == iterations * Catalog.protobufBody.count, "every round trip gives the input's size back")
if timed {
    let sorted = samples.sorted()
    let fastest = Double(sorted[0]) / 1000
    let median = Double(sorted[sorted.count / 2]) / 1000
    print("\(arguments[1]) fastest \(fastest) µs median \(median) µs over \(iterations) round trips")
} else {
    print(total)
}

// Micro benchmarks (ordo-one package-benchmark): the serializers and the cache, each next to
// its peers. Run by scripts/benchmark.sh (`swift package benchmark` in Benchmarks/).
import BenchSupport
import Benchmark
import CBenchRaw
import Courier
import CourierProtobuf
import Foundation
import HTTPTypes
import SwiftProtobuf

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
        timeUnits: .nanoseconds,
        warmupIterations: 100,
        maxDuration: .seconds(2),
        maxIterations: 200_000)

    jsonBenchmarks()
    formBenchmarks()
    protobufBenchmarks()
    cacheBenchmarks()
}

// MARK: - JSON: the 1 KB body into `Catalog`, ~100 KB and ~1 MB API payloads into `IssuePage`

func jsonBenchmarks() {
    let body = Catalog.body
    let decoder = JSONDecoder()
    Benchmark("JSON decode: Foundation JSONDecoder") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try decoder.decode(Catalog.self, from: body))
        }
    }
    let context = jsonResponse(body)
    let serializer: DecodableResponseSerializer<Catalog> = .decodable(Catalog.self)
    let pipeline = ResponsePipeline.default
    Benchmark("JSON decode: Courier pipeline (.json = CourierJSONDecoder)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try pipeline.process(context, with: serializer))
        }
    }
    let foundationSerializer: DecodableResponseSerializer<Catalog> = .decodable(Catalog.self, using: .foundationJSON)
    Benchmark("JSON decode: Courier pipeline (.foundationJSON)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try pipeline.process(context, with: foundationSerializer))
        }
    }
    let courierDecoder = CourierJSONDecoder()
    Benchmark("JSON decode: CourierJSONDecoder (bare)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try courierDecoder.decode(Catalog.self, from: body))
        }
    }

    // The large payloads: one decode of 1 MB takes tens of milliseconds with Foundation, so
    // fewer warm-up iterations and a longer run.
    let large = Benchmark.Configuration(warmupIterations: 3, maxDuration: .seconds(3))
    for (size, payload) in [("100 KB", IssuePage.body100KB), ("1 MB", IssuePage.body1MB)] {
        let context = jsonResponse(payload)
        let serializer: DecodableResponseSerializer<IssuePage> = .decodable(IssuePage.self)
        Benchmark("JSON decode \(size): Foundation JSONDecoder", configuration: large) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try decoder.decode(IssuePage.self, from: payload))
            }
        }
        Benchmark("JSON decode \(size): Courier pipeline (.json = CourierJSONDecoder)", configuration: large) {
            benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try pipeline.process(context, with: serializer))
            }
        }
        Benchmark("JSON decode \(size): CourierJSONDecoder (bare)", configuration: large) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try courierDecoder.decode(IssuePage.self, from: payload))
            }
        }
    }

    // Encoding: default options (compact, keys in Foundation's hash order or Courier's
    // encoding order), the bare encoders and the request serializer `.json` writing a POST body.
    let encoder = JSONEncoder()
    let courierEncoder = CourierJSONEncoder()
    let post = PreparedRequest(
        head: HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1", path: "/catalog"))
    func encodeBenchmarks<Model: Encodable & Sendable>(
        _ size: String, _ model: Model, _ configuration: Benchmark.Configuration
    ) {
        Benchmark("JSON encode \(size): Foundation JSONEncoder", configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try encoder.encode(model))
            }
        }
        Benchmark("JSON encode \(size): CourierJSONEncoder (bare)", configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try courierEncoder.encode(model))
            }
        }
        Benchmark("JSON encode \(size): Courier request serializer (.json)", configuration: configuration) {
            benchmark in
            for _ in benchmark.scaledIterations {
                var request = post
                try JSONRequestSerializer.json.serialize(model, into: &request)
                blackHole(request)
            }
        }
    }
    encodeBenchmarks("1 KB", Catalog.sample, Benchmark.defaultConfiguration)
    encodeBenchmarks("100 KB", IssuePage.sample100KB, large)
    encodeBenchmarks("1 MB", IssuePage.sample1MB, large)
}

/// A 200 response with `Content-Type: application/json` and `body`, as the transport hands it over.
func jsonResponse(_ body: Data) -> ResponseContext {
    ResponseContext(
        request: HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1", path: "/catalog.json"),
        response: HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), body: body)
}

// MARK: - Form encoding

func formBenchmarks() {
    let encoder = URLEncodedFormEncoder()
    let form = SignUpForm()
    Benchmark("Form encode: Courier URLEncodedFormEncoder") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(form))
        }
    }
    Benchmark("Form encode: Foundation URLComponents (hand-mapped fields)") { benchmark in
        for _ in benchmark.scaledIterations {
            var components = URLComponents()
            components.queryItems =
                [
                    URLQueryItem(name: "username", value: form.username),
                    URLQueryItem(name: "email", value: form.email),
                    URLQueryItem(name: "password", value: form.password),
                    URLQueryItem(name: "age", value: String(form.age)),
                    URLQueryItem(name: "newsletter", value: String(form.newsletter)),
                    URLQueryItem(name: "referrer", value: form.referrer),
                ] + form.interests.map { URLQueryItem(name: "interests[]", value: $0) }
            blackHole(Data((components.percentEncodedQuery ?? "").utf8))
        }
    }
}

// MARK: - Protobuf: decode + encode of the same catalog

func protobufBenchmarks() {
    let bytes = Catalog.protobufBody
    let out = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 4096)
    Benchmark("Protobuf decode+encode: raw protobuf-c (C unpack + pack)") { benchmark in
        for _ in benchmark.scaledIterations {
            let written = bytes.withUnsafeBufferPointer { input in
                cbench_roundtrip(input.baseAddress, input.count, out.baseAddress, out.count)
            }
            precondition(written == bytes.count)
            blackHole(written)
        }
    }
    let data = Data(bytes)
    let decoder = ProtobufDecoder()
    let encoder = ProtobufEncoder()
    Benchmark("Protobuf decode+encode: Courier generated model (ProtobufDirectCodable)") { benchmark in
        for _ in benchmark.scaledIterations {
            let model = try decoder.decode(GeneratedCatalog.self, from: data)
            blackHole(try encoder.encode(model))
        }
    }
    Benchmark("Protobuf decode+encode: Courier Codable model") { benchmark in
        for _ in benchmark.scaledIterations {
            let model = try decoder.decode(Catalog.self, from: data)
            blackHole(try encoder.encode(model))
        }
    }
    Benchmark("Protobuf decode+encode: apple/swift-protobuf") { benchmark in
        for _ in benchmark.scaledIterations {
            let message = try Courier_Bench_Catalog(serializedBytes: bytes)
            let encoded: [UInt8] = try message.serializedBytes()
            blackHole(encoded)
        }
    }
}

import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Golden files under `Fixtures/serialization/`, found from this file's path.
/// Run with `COURIER_RECORD_GOLDENS=1` to (re)write them; review the diff before committing.
enum Golden {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Serialization
        .deletingLastPathComponent()  // CourierTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // repository root
        .appendingPathComponent("Fixtures/serialization")

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Compares `actual` with the golden file byte for byte.
    static func check(_ actual: Data, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let url = url(name)
        if ProcessInfo.processInfo.environment["COURIER_RECORD_GOLDENS"] == "1" {
            try actual.write(to: url)
            return
        }
        guard let expected = FileManager.default.contents(atPath: url.path) else {
            Issue.record("missing golden file \(url.path)", sourceLocation: sourceLocation)
            return
        }
        #expect(
            actual == expected,
            "differs from \(name):\n\(String(decoding: actual, as: UTF8.self))", sourceLocation: sourceLocation)
    }
}

struct Address: Codable, Equatable, Sendable {
    var city: String
    var zip: String
}

struct Profile: Codable, Equatable, Sendable {
    var name: String
    var age: Int
    var tags: [String]
    var address: Address
    var nickname: String?
    var active: Bool

    static let sample = Profile(
        name: "Ann Lee", age: 30, tags: ["a", "b"], address: Address(city: "Oslo", zip: "0150"), nickname: nil,
        active: true)
}

/// Builds responses for serializer tests.
func makeContext(
    status: Int = 200, contentType: String? = "application/json", body: String = "",
    method: HTTPRequest.Method = .get
) -> ResponseContext {
    makeContext(status: status, contentType: contentType, bytes: Data(body.utf8), method: method)
}

func makeContext(
    status: Int = 200, contentType: String? = "application/json", bytes: Data, method: HTTPRequest.Method = .get
) -> ResponseContext {
    var response = HTTPResponse(status: .init(code: status))
    if let contentType { response.headerFields[.contentType] = contentType }
    return ResponseContext(
        request: HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1", path: "/x"),
        response: response, body: bytes)
}

func makeRequest(_ method: HTTPRequest.Method = .post, path: String = "/items") -> PreparedRequest {
    PreparedRequest(head: HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1", path: path))
}

/// The bytes of a body, reading file segments from disk (tests only).
func materialize(_ body: RequestBody?) throws -> Data {
    var result = Data()
    for segment in body?.segments ?? [] {
        switch segment {
        case .data(let data): result.append(data)
        case .file(let path): result.append(try Data(contentsOf: URL(fileURLWithPath: path)))
        case .stream: throw CourierError(.invalidRequest, "a streamed body cannot be materialized")
        }
    }
    return result
}

/// Runs `body` and returns the `CourierError` it threw, recording an issue if it threw none.
func thrownError(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> CourierError? {
    do {
        try body()
        Issue.record("expected a CourierError", sourceLocation: sourceLocation)
        return nil
    } catch let error as CourierError {
        return error
    } catch {
        Issue.record("expected a CourierError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

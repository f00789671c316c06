import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Every serializer through the real transport against the loopback server.
@Suite struct SerializationEndToEndTests {
    struct Echo: Decodable {
        var method: String
        var path: String
        var query: String
        var headers: [String: String]
        var body: String
        var bodyBase64: String
        var bodyBytes: Data { Data(base64Encoded: bodyBase64) ?? Data() }
    }

    /// A server and a client, both stopped at the end.
    final class Harness: Sendable {
        let server: TestServer
        let client: HTTPClient
        init(maxResponseSize: Int64? = nil) throws {
            server = try TestServer()
            var configuration = HTTPClient.Configuration()
            configuration.baseURL = server.baseURL
            if let maxResponseSize { configuration.maxResponseSize = maxResponseSize }
            client = try HTTPClient(configuration: configuration)
        }
        deinit { server.stop() }

        /// Serializes `parameters` with `serializer`, sends, returns what a response serializer sees.
        func send(
            _ method: HTTPRequest.Method, _ path: String, parameters: some Encodable = Empty(),
            serializer: some RequestSerializer = .json, accept: String? = nil, options: CallOptions = .init()
        ) async throws -> ResponseContext {
            var request = PreparedRequest(
                head: HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path))
            if !(parameters is Empty) { try serializer.serialize(parameters, into: &request) }
            if let accept { request.head.headerFields[.accept] = accept }
            let response = try await client.send(request.head, body: request.body, options: options)
            return ResponseContext(request: request.head, response: response.head, body: response.body)
        }

        func echo(_ context: ResponseContext) throws -> Echo {
            try ResponsePipeline().process(context, with: .decodable(Echo.self))
        }
    }

    @Test func jsonBodyAndJSONQuery() async throws {
        let harness = try Harness()
        let post = try harness.echo(await harness.send(.post, "/echo", parameters: Profile.sample))
        #expect(post.method == "POST")
        #expect(post.headers["content-type"] == "application/json")
        #expect(try JSONDecoder().decode(Profile.self, from: post.bodyBytes) == .sample)

        let get = try harness.echo(await harness.send(.get, "/echo?page=2", parameters: Profile.sample))
        #expect(get.bodyBytes.isEmpty)
        #expect(get.query.hasPrefix("page=2&active=true"))
        #expect(try URLEncodedFormDecoder().decode(Profile.self, fromQuery: get.query) == .sample)
    }

    @Test func formBodyAndQueryRoundTripByteForByte() async throws {
        let harness = try Harness()
        let encoder = URLEncodedFormEncoder(arrays: .indexed)
        let post = try harness.echo(
            await harness.send(.post, "/echo", parameters: FormGoldenTests.Order(), serializer: .form(encoder)))
        #expect(post.headers["content-type"] == "application/x-www-form-urlencoded")
        #expect(post.bodyBytes == (try Data(contentsOf: Golden.url("form-default-indexed.txt"))))

        let delete = try harness.echo(
            await harness.send(.delete, "/echo", parameters: Profile.sample, serializer: .form))
        #expect(try URLEncodedFormDecoder().decode(Profile.self, fromQuery: delete.query) == .sample)
        #expect(delete.bodyBytes.isEmpty)
    }

    @Test func multipartArrivesExactlyAsBuilt() async throws {
        let harness = try Harness()
        let form = MultipartTests().goldenForm(.utf8)
        let echo = try harness.echo(await harness.send(.post, "/echo", parameters: form, serializer: .multipart))
        #expect(echo.headers["content-type"] == "multipart/form-data; boundary=courier-golden-boundary")
        #expect(echo.bodyBytes == (try Data(contentsOf: Golden.url("multipart-utf8.txt"))))
    }

    @Test func multipartStreamsAFileLargerThanTheResponseCap() async throws {
        let harness = try Harness(maxResponseSize: 64 * 1024)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID()).bin").path
        let size = 4 * 1024 * 1024
        #expect(FileManager.default.createFile(atPath: path, contents: TestServer.bytePattern(count: size)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var form = MultipartFormData()
        form.append("holiday", name: "album")
        form.appendFile(at: path, name: "photo", contentType: "image/jpeg")
        let expectedLength = try form.contentLength()

        let lastProgress = LockedValue<TransferProgress?>(nil)
        let options = CallOptions(uploadProgress: { progress in lastProgress.withLock { $0 = progress } })
        let context = try await harness.send(
            .post, "/upload", parameters: form, serializer: .multipart, options: options)
        struct Upload: Decodable { var bytes: Int64; var contentType: String }
        let upload = try ResponsePipeline().process(context, with: .decodable(Upload.self))
        #expect(upload.bytes == expectedLength)
        #expect(upload.contentType.hasPrefix("multipart/form-data; boundary=courier-"))
        let progress = lastProgress.withLock { $0 }
        #expect(progress?.completed == expectedLength)
        #expect(progress?.total == expectedLength)
    }

    @Test func dataAndStringWithCharsets() async throws {
        let harness = try Harness()
        let bytes = try await harness.send(.get, "/bytes/1000")
        #expect(try ResponsePipeline().process(bytes, with: .data) == TestServer.bytePattern(count: 1000))

        harness.server.enqueue(
            ScriptedResponse(
                headers: [.contentType: "text/plain; charset=ISO-8859-1"], body: Data([0x63, 0x61, 0x66, 0xE9])))
        #expect(try ResponsePipeline().process(await harness.send(.get, "/latin1"), with: .string) == "café")
        harness.server.enqueue(.text("naïve 😀"))
        #expect(try ResponsePipeline().process(await harness.send(.get, "/utf8"), with: .string) == "naïve 😀")
    }

    @Test func emptyBodiesAndHead() async throws {
        let harness = try Harness()
        let noContent = try await harness.send(.get, "/status/204")
        #expect(try ResponsePipeline().process(noContent, with: .decodable(Empty.self)) == Empty())
        #expect(
            thrownError { _ = try ResponsePipeline().process(noContent, with: .decodable(Profile.self)) }?.code
                == .emptyBody)
        let head = try await harness.send(.head, "/echo")
        #expect(try ResponsePipeline().process(head, with: .decodable(Profile?.self)) == nil)
    }

    @Test func validationCarriesTheDecodedErrorModel() async throws {
        let harness = try Harness()
        harness.server.enqueue(.json(text: #"{"code":4012,"message":"token expired"}"#, status: 401))
        let context = try await harness.send(.get, "/me")
        let pipeline = ResponsePipeline(
            validator: ResponseValidator.default.decodingErrors(as: ValidationTests.APIError.self))
        let error = thrownError { _ = try pipeline.process(context, with: .decodable(Profile.self)) }
        #expect(error?.code == .httpStatus)
        #expect(error?.status?.code == 401)
        #expect(error?.errorModel(as: ValidationTests.APIError.self) == .init(code: 4012, message: "token expired"))

        harness.server.enqueue(.text("<h1>maintenance</h1>", contentType: "text/html"))
        let html = try await harness.send(.get, "/me")
        #expect(
            thrownError { _ = try ResponsePipeline().process(html, with: .decodable(Profile.self)) }?.code
                == .unacceptableContentType)
    }

    @Test func envelopeAndXSSIPreprocessing() async throws {
        let harness = try Harness()
        harness.server.enqueue(
            .json(text: ")]}',\n{\"code\":0,\"msg\":\"ok\",\"data\":{\"city\":\"Oslo\",\"zip\":\"0150\"}}"))
        let pipeline = ResponsePipeline(preprocessors: [.stripXSSIPrefix, .envelope])
        #expect(
            try pipeline.process(await harness.send(.get, "/address"), with: .decodable(Address.self))
                == Address(city: "Oslo", zip: "0150"))
        harness.server.enqueue(.json(text: #"{"code":5,"msg":"banned"}"#))
        let failed = try await harness.send(.get, "/address")
        let error = thrownError { _ = try pipeline.process(failed, with: .decodable(Address.self)) }
        #expect(error?.code == .apiError)
    }

    @Test func negotiationSendsAcceptAndPicksByContentType() async throws {
        let harness = try Harness()
        let serializer = NegotiatingResponseSerializer<Address>.negotiating(
            Address.self, among: [JSONModelDecoding.shared, URLEncodedFormModelDecoding()])
        harness.server.route("/negotiate") { request in
            let accept = request.header("Accept") ?? ""
            return ScriptedResponse(
                headers: [.contentType: "application/x-www-form-urlencoded", .init("X-Seen-Accept")!: accept],
                body: Data("city=Bergen&zip=5003".utf8))
        }
        let context = try await harness.send(.get, "/negotiate", accept: serializer.acceptHeader)
        #expect(context.response.headerFields[.init("X-Seen-Accept")!] == serializer.acceptHeader)
        #expect(try ResponsePipeline().process(context, with: serializer) == Address(city: "Bergen", zip: "5003"))
    }

    @Test func customSerializerRoundTrip() async throws {
        let harness = try Harness()
        harness.server.route("/kv") { request in
            ScriptedResponse(headers: [.contentType: "text/x-key-value"], body: request.body)
        }
        let context = try await harness.send(
            .post, "/kv", parameters: Address(city: "Oslo", zip: "0150"), serializer: KeyValueLinesSerializer())
        #expect(try ResponsePipeline().process(context, with: .keyValueLines) == ["city": "Oslo", "zip": "0150"])
        #expect(
            try ResponsePipeline().process(context, with: .decodable(Address.self, using: .keyValue))
                == Address(city: "Oslo", zip: "0150"))
    }
}

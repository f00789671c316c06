import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

// The code samples of Docs/*.md, compiled so the guides cannot drift from the API. Not run
// (they talk to example hosts); `CodeSamplesTests` runs the README's against a loopback
// server. Names are nested in `DocSamples` so they do not clash with the other tests.

enum DocSamples {
    struct User: Codable, Sendable {
        var id: Int
        var name: String
    }
    struct ServerError: Decodable, Sendable {
        var code: Int
        var message: String
    }
    struct Video: Decodable, Sendable { var id: Int }
    struct SearchResult: Decodable, Sendable { var hits: Int }

    // MARK: GettingStarted.md

    struct UserService: APIService {
        let core: ServiceCore

        func user(id: Int) async throws(CourierError) -> User {
            try await get("users/\(id)")
        }

        func search(_ text: String, page: Int) async throws(CourierError) -> [User] {
            try await get("users", parameters: ["q": text, "page": String(page)])
        }

        func update(_ user: User) async throws(CourierError) -> User {
            try await put("users/\(user.id)", body: user)
        }

        func remove(id: Int) async throws(CourierError) {
            let _: Empty = try await delete("users/\(id)")
        }
    }

    static func gettingStarted() async throws {
        let client = try HTTPClient(
            configuration: .init(
                baseURL: URL(string: "https://api.example.com/v1")!,
                timeout: .seconds(30),
                defaultHeaders: [.userAgent: "MyApp/1.0"]))
        let users = UserService(core: ServiceCore(client: client))
        let ada = try await users.user(id: 42)

        let shared = ServiceConfiguration(
            generalParameters: [("os", "linux"), ("channel", "cli")],
            pipeline: ResponsePipeline(preprocessors: [.envelope]),
            retryPolicy: .default)
        _ = UserService(core: ServiceCore(client: client, configuration: shared))

        let options = CallOptions(requestSerializer: .form, timeout: .seconds(5))
        let saved: User = try await users.post("users", body: ada, options: options)
        _ = saved
        let quick = CallOptions.default.with(\.retryPolicy, RetryPolicy.none)
        _ = quick

        let response = try await users.send(Endpoint<User>.get("users/42"))
        print(response.status, response.attempts, response.isFromCache, response.metrics)

        let id = users.start(
            Endpoint<User>.get("users/42"),
            onSuccess: { user in print(user.name) },
            onFailure: { error in print(error) },
            onFinished: { print("done") })
        users.core.calls.cancel(id)

        let call = users.call(Endpoint<User>.get("users/7"))
        call.start()
        let seven = try await call.value().value
        _ = seven

        let raw = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/health"))
        print(raw.status.code, raw.body.count)
    }

    // MARK: GettingStarted.md, service hooks

    enum AuthError: Error { case sessionExpired }
    struct APIError: Error, Decodable {
        var code: Int
        var message: String
    }
    struct Status: Decodable { var status: String }
    enum FeedError: Error { case busy, closed }

    static func serviceHooks(users: UserService) async throws {
        var configuration = ServiceConfiguration()
        configuration.adapters = [
            .adapter { request, context in
                var request = request
                request.head.headerFields[HTTPField.Name("X-Request-ID")!] = UUID().uuidString
                request.head.headerFields[HTTPField.Name("X-Attempt")!] = "\(context.attempt)"
                return request
            }
        ]

        configuration.pipeline.validator = .default.checking { context in
            switch try JSONDecoder().decode(Status.self, from: context.body).status {
            case "busy": .refuse(FeedError.busy, retryable: true)
            case "closed": .refuse(FeedError.closed)
            default: .accept
            }
        }

        configuration.errorMapper = { error in
            if error.status == .unauthorized { return AuthError.sessionExpired }
            if let body = error.body, let api = try? JSONDecoder().decode(APIError.self, from: body) { return api }
            return nil  // leave it as it is
        }
        _ = configuration

        do {
            let me: User = try await users.get("me")
            _ = me
        } catch {
            if error.domain(as: AuthError.self) == .sessionExpired { /* show the login screen */  }
        }

        let search = try await users.send(
            Endpoint<[User]>(.post, "search", parameters: ["page": "2"], body: ["q": "ada"]))
        let removed = try await users.send(Endpoint<Empty>(.delete, "posts/7", body: ["reason": "spam"]))
        _ = (search, removed)
    }

    // MARK: Serializers.md

    struct CSVRequestSerializer: RequestSerializer {
        func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest) throws {
            guard let row = parameters as? [String] else {
                throw CourierError(.encoding, "CSV parameters must be [String], not \(Parameters.self)")
            }
            let line = row.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
                .joined(separator: ",")
            request.setBody(Data((line + "\r\n").utf8), contentType: "text/csv; charset=utf-8")
        }
    }

    struct CSVResponseSerializer: ResponseSerializer {
        var acceptableContentTypes: [String] { ["text/csv"] }

        func serialize(_ context: ResponseContext) throws -> [[String]] {
            guard let text = String(data: context.body, encoding: .utf8) else {
                throw CourierError(
                    .decoding, "the CSV body is not UTF-8", response: context.response, body: context.body)
            }
            return text.split(whereSeparator: \.isNewline).map { line in
                line.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            }
        }
    }

    struct PropertyListModelDecoding: ModelDecoding {
        private let decoder = PropertyListDecoder()
        var acceptableContentTypes: [String] { ["application/x-plist"] }

        func decode<T: Decodable>(_ type: T.Type, from body: Data, context: ResponseContext) throws -> T {
            try decoder.decode(type, from: body)
        }
    }

    static func serializers(service: UserService) async throws {
        _ = ServiceConfiguration(
            pipeline: ResponsePipeline(
                validator: .default.accepting(statusCodes: [200..<300, 304..<305]),
                preprocessors: [.stripXSSIPrefix, .envelope]))
        let ack: Empty = try await service.post(
            "import", body: ["a", "b"], options: CallOptions(requestSerializer: .csv))
        _ = ack
        let rows = try await service.send(Endpoint(.get, "export", serializer: CSVResponseSerializer())).value
        _ = rows
        _ = ServiceConfiguration(decoding: PropertyListModelDecoding())
        _ = ServiceConfiguration(decoding: .json(keys: .convertFromSnakeCase, dates: .iso8601))
        _ = ServiceConfiguration(decoding: .foundationJSON)
        _ = ServiceConfiguration(decoding: JSONModelDecoding(decoder: JSONDecoder()))
    }

    // MARK: Caching.md

    static func caching(feeds: UserService) async throws {
        let cache = try HostScopedCache(
            configuration: .init(rules: [
                CacheRule("api.example.com", .followHTTP),
                CacheRule(".cdn.example.com", .forceLifetime(.seconds(365 * 86_400))),
                CacheRule("pay.example.com", .never),
            ]))
        let client = try HTTPClient(
            configuration: .init(baseURL: URL(string: "https://api.example.com")!, cache: cache))

        var options = CallOptions()
        options.cachePolicy = .reloadIgnoringCache
        let feed: [User] = try await feeds.get("feed", options: options)
        _ = feed
        let news = try await feeds.send(
            Endpoint<[User]>.get(
                "news", options: CallOptions(cacheLifetime: .seconds(180))))
        print(news.isFromCache)

        client.configuration.notificationCenter.post(name: .courierUserDidLogOut, object: nil)
        let dropped = client.configuration.cache?.purgeAllIdentities() ?? 0
        print("purged \(dropped) cached responses")

        _ = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(".example.com", .followHTTP)],
                storage: .disk(directory: "/var/cache/myapp/http"),
                memoryCapacityBytes: 8 << 20, diskCapacityBytes: 128 << 20, maxEntryBytes: 2 << 20,
                onEvent: { event in print(event) }))

        let server = try TestServer()
        let testClient = try HTTPClient(
            configuration: .init(
                resolve: [HTTPClient.ResolveOverride(host: "cdn.courier.test", port: Int(server.port))],
                cache: cache))
        _ = try await testClient.send(
            HTTPRequest(
                method: .get, scheme: "http", authority: "cdn.courier.test:\(server.port)", path: "/logo.png"))
    }

    // MARK: RequestControl.md (monitors)

    struct SlowCallMonitor: EventMonitor {
        func handle(_ event: MonitorEvent) {
            guard case .finished(let call, _, let metrics) = event, metrics.duration > .seconds(2) else { return }
            print("slow: \(call.request.path ?? "/") took \(metrics.duration)")
        }
    }

    static func monitors() {
        let monitored = ServiceConfiguration(monitors: [SlowCallMonitor(), LoggingEventMonitor()])
        _ = monitored
    }

    // MARK: Authentication.md

    struct AuthService: APIService {
        let core: ServiceCore

        func refresh() async throws(CourierError) -> String { "new" }
    }

    static func authentication(client: HTTPClient) throws {
        NotificationCenter.default.post(
            name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "token"])
        _ = try HTTPClient(
            configuration: .init(
                baseURL: URL(string: "https://api.example.com")!,
                authorization: .custom { token in [HTTPField(name: HTTPField.Name("X-Api-Key")!, value: token)] }))

        let auth = AuthService(core: ServiceCore(client: client))
        let coordinator = AuthRefreshCoordinator<String> { expired in
            let token = try await auth.refresh()
            // The note on other code that sends through the client directly.
            try client.logIn(credential: token, replacing: expired)
            return token
        }
        let shared = ServiceConfiguration(authentication: .bearer(coordinator))
        _ = UserService(core: ServiceCore(client: client, configuration: shared))

        let signed = AuthenticationInterceptor(coordinator: coordinator, requiresRefresh: { $0.status.code == 419 }) {
            token, request in request.headerFields[HTTPField.Name("X-Session")!] = token
        }
        _ = signed
        _ = ServiceConfiguration(cookieJar: CookieJar())
    }

    // MARK: RequestControl.md

    struct FeedPage: Decodable, Sendable {
        var posts: [User]
        var nextCursor: String?
    }

    static func requestControl(feed: UserService, users: UserService, client: HTTPClient) async throws {
        let retry = RetryPolicy(maximumRetries: 2, baseDelay: .milliseconds(300), multiplier: 2, jitter: 0.5)
        let response = try await feed.send(
            Endpoint<User>.get("feed/trending", options: CallOptions(retryPolicy: retry)))
        print(response.attempts)
        _ = retry.allowingNonIdempotent()

        _ = CallOptions(interval: .drop(.seconds(1)))
        _ = CallOptions(interval: .delay(.seconds(1)))
        let lastETag = "x"
        _ = CallOptions(skipIf: { false })
        _ = CallOptions(acceptsResult: { context in context.response.headerFields[.eTag] != lastETag })
        _ = CallOptions.default.with(\.deduplicates, false)

        let call = feed.call(Endpoint<FeedPage>.get("feed"))
        call.start()
        feed.core.calls.cancel(call.id)
        feed.core.calls.cancelAll()

        let ids = [1, 2, 3]
        let operations: [@Sendable () async throws -> User] = ids.map { id in { try await users.user(id: id) } }
        let results = await Batch.run(operations, maximumConcurrent: 4) { progress in
            print("\(progress.completed)/\(progress.total), \(progress.failed) failed")
        }
        _ = results

        let avatar = try await Chain { try await users.user(id: 42) }
            .then { user in try await users.send(Endpoint(.get, "avatars/\(user.id).png", serializer: .data)) }
            .run()
        _ = avatar

        let pages = feed.paginator("feed", style: .cursor(limit: 20), as: FeedPage.self) { page in
            Page(items: page.posts, nextCursor: page.nextCursor)
        }
        _ = try await pages.first()
        while await pages.hasMore { _ = try await pages.next() }
        _ = try await pages.all(maximumPages: 100)

        let pool = try ServerPool(
            environments: [
                .production: [
                    URL(string: "https://api.example.com/v1")!, URL(string: "https://api-b.example.com/v1")!,
                ],
                .staging: [URL(string: "https://staging.example.com/v1")!],
            ],
            current: .production,
            policy: FailoverPolicy(errorRateThreshold: 0.10, minimumRequests: 20, window: .seconds(60)))
        _ = UserService(core: ServiceCore(client: client, configuration: ServiceConfiguration(servers: pool)))
        try pool.switchEnvironment(to: .staging)
        try pool.select(index: 1)
    }

    // MARK: Errors.md

    struct MappingUserService: APIService {
        let core: ServiceCore

        enum Failure: Error, Equatable {
            case signedOut
            case notFound
            case rejected(code: Int, message: String)
            case offline
            case unexpected(String)
        }

        func user(id: Int) async throws(Failure) -> User {
            do {
                return try await get(
                    "users/\(id)", options: CallOptions(validator: .default.decodingErrors(as: ServerError.self)))
            } catch {
                throw Self.map(error)
            }
        }

        static func map(_ error: CourierError) -> Failure {
            switch error.code {
            case .httpStatus where error.status == .unauthorized, .authentication: .signedOut
            case .httpStatus where error.status == .notFound: .notFound
            case .httpStatus:
                if let server = error.errorModel(as: ServerError.self) {
                    .rejected(code: server.code, message: server.message)
                } else {
                    .unexpected(error.message)
                }
            case .cannotConnect, .timedOut: .offline
            default: .unexpected(error.description)
            }
        }
    }

    enum AppError: Error, Equatable {
        case sessionExpired
        case rejected(code: Int, message: String)
    }

    static func errorMapping(users: UserService) async {
        var configuration = ServiceConfiguration(
            pipeline: ResponsePipeline(validator: .default.decodingErrors(as: ServerError.self)))
        configuration.errorMapper = { error in
            if error.status == .unauthorized { return AppError.sessionExpired }
            if let server = error.errorModel(as: ServerError.self) {
                return AppError.rejected(code: server.code, message: server.message)
            }
            return nil
        }
        _ = configuration

        do {
            let me: User = try await users.get("me")
            _ = me
        } catch  where error.domain(as: AppError.self) == .sessionExpired {
            // sign in again
        } catch {
            print(error)  // CourierError.httpStatus: … — domain: rejected(…)
        }
    }

    static func errors(users: UserService) async {
        let options = CallOptions(validator: .default.decodingErrors(as: ServerError.self))
        do {
            let user: User = try await users.get("users/42", options: options)
            _ = user
        } catch {
            if let server = error.errorModel(as: ServerError.self) { print(server.code, server.message) }
        }
        _ = ServiceConfiguration(pipeline: ResponsePipeline(validator: .default.decodingErrors(as: ServerError.self)))
    }

    // MARK: Migrating.md

    struct SearchService: APIService {
        let core: ServiceCore

        func search(_ text: String) async throws(CourierError) -> SearchResult {
            try await get(
                "search", parameters: ["q": text],
                options: CallOptions(retryPolicy: RetryPolicy(maximumRetries: 1), interval: .drop(.seconds(1))))
        }
    }

    static func migrating(service: UserService) async throws {
        let videos = try await service.send(.videos()).value
        _ = videos
    }
}

extension RequestSerializer where Self == DocSamples.CSVRequestSerializer {
    static var csv: DocSamples.CSVRequestSerializer { DocSamples.CSVRequestSerializer() }
}

extension Endpoint where Model == [DocSamples.Video] {
    static func videos() -> Endpoint {
        .get(
            "video", parameters: ["type": "JSON"],
            options: CallOptions(cacheLifetime: .seconds(180)))
    }
}

import HTTPTypes

/// One API call as a value: method, path, query parameters, body, options and how to read the
/// answer.
/// Keep one per API (`static func user(id:) -> Endpoint<User>`) and send it with
/// `APIService.send(_:)`.
public struct Endpoint<Model: Sendable>: Sendable {
    /// The HTTP method.
    public var method: HTTPRequest.Method
    /// The path relative to the server (`users/42`); see `RelativePath` for the rules.
    public var path: String
    /// Encoded into the query string (`?q=swift&page=2`), whatever the method.
    public var parameters: (any Encodable & Sendable)?
    /// Encoded by the request serializer into the body (JSON by default), whatever the method.
    public var body: (any Encodable & Sendable)?
    /// Per-call overrides of the service's configuration (timeout, retry, cache, headers...).
    public var options: CallOptions
    /// Decodes the response; nil uses the service's default format for `Decodable` models.
    public var serializer: (any ResponseSerializer<Model>)?

    /// An endpoint whose answer is decoded by `serializer`.
    public init(
        _ method: HTTPRequest.Method, _ path: String, parameters: (any Encodable & Sendable)? = nil,
        body: (any Encodable & Sendable)? = nil, serializer: some ResponseSerializer<Model>,
        options: CallOptions = .default
    ) {
        self.method = method
        self.path = path
        self.parameters = parameters
        self.body = body
        self.options = options
        self.serializer = serializer
    }
}

extension Endpoint where Model: Decodable {
    /// An endpoint whose answer is decoded with the service's default format (JSON unless configured).
    public init(
        _ method: HTTPRequest.Method, _ path: String, parameters: (any Encodable & Sendable)? = nil,
        body: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self, options: CallOptions = .default
    ) {
        self.method = method
        self.path = path
        self.parameters = parameters
        self.body = body
        self.options = options
        self.serializer = nil
    }

    /// A `GET` of `path` with `parameters` in the query string, decoded as `Model`.
    public static func get(
        _ path: String, parameters: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        options: CallOptions = .default
    ) -> Endpoint {
        Endpoint(.get, path, parameters: parameters, options: options)
    }

    /// A `POST` of `body` (encoded by the request serializer) to `path`, decoded as `Model`.
    public static func post(
        _ path: String, body: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        options: CallOptions = .default
    ) -> Endpoint {
        Endpoint(.post, path, body: body, options: options)
    }
}

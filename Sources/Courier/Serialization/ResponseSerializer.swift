import Foundation
import HTTPTypes

/// What a response serializer sees: the request that was sent, the response head, the body.
public struct ResponseContext: Sendable {
    public var request: HTTPRequest
    public var response: HTTPResponse
    public var body: Data

    public init(request: HTTPRequest, response: HTTPResponse, body: Data) {
        self.request = request
        self.response = response
        self.body = body
    }
}

/// Turns a received response into a value.
///
/// Validation of status and content type happens before, in the pipeline; a serializer
/// decodes. Built-ins read as static members at the call site: `.json`, `.data`, `.string`, …
public protocol ResponseSerializer<Output>: Sendable {
    associatedtype Output: Sendable
    /// The media types this serializer can read, for the `Accept` header and validation.
    /// Empty means any.
    var acceptableContentTypes: [String] { get }
    /// Decodes the response.
    /// - Throws: `CourierError` (`.decoding`, `.emptyBody`, …).
    func serialize(_ context: ResponseContext) throws -> Output
}

import Foundation

/// A step between validation and decoding that rewrites the response, usually its body:
/// unwrapping an envelope, stripping an XSSI prefix, decrypting, …
///
/// Preprocessors compose: a ``ResponsePipeline`` runs its list in order. Bodiless responses
/// skip preprocessing.
public protocol ResponsePreprocessor: Sendable {
    /// Returns the response to decode.
    /// - Throws: a `CourierError` (e.g. `.apiError` for an envelope reporting failure).
    func preprocess(_ context: ResponseContext) throws -> ResponseContext
}

/// A preprocessor from a closure.
public struct ClosurePreprocessor: ResponsePreprocessor {
    private let body: @Sendable (ResponseContext) throws -> ResponseContext

    /// - Parameter body: rewrites the response.
    init(_ body: @escaping @Sendable (ResponseContext) throws -> ResponseContext) { self.body = body }

    public func preprocess(_ context: ResponseContext) throws -> ResponseContext { try body(context) }
}

/// Removes an anti-XSSI prefix such as `)]}',\n` from the start of the body, if present.
/// The body stays a slice of the received buffer: nothing is copied.
public struct XSSIPrefixPreprocessor: ResponsePreprocessor {
    /// The prefix to strip.
    let prefix: Data

    /// A preprocessor that strips `prefix` from the start of a body that has it.
    /// - Parameter prefix: the prefix to strip (Angular's `)]}',\n` by default).
    public init(prefix: String = ")]}',\n") { self.prefix = Data(prefix.utf8) }

    public func preprocess(_ context: ResponseContext) throws -> ResponseContext { stripped(context) }

    /// `context` without the prefix, if its body starts with it.
    func stripped(_ context: ResponseContext) -> ResponseContext {
        guard context.body.starts(with: prefix) else { return context }
        var result = context
        result.body = context.body.dropFirst(prefix.count)
        return result
    }
}

extension ResponseContext {
    /// The answer without the anti-XSSI prefixes that `preprocessors` strip: a prefix guards the
    /// whole body, so it goes before an envelope is read (`EnvelopeRule`), not after.
    func strippingXSSIPrefixes(_ preprocessors: [any ResponsePreprocessor]) -> ResponseContext {
        var result = self
        for case let strip as XSSIPrefixPreprocessor in preprocessors { result = strip.stripped(result) }
        return result
    }
}

extension ResponsePreprocessor where Self == XSSIPrefixPreprocessor {
    /// Strips Angular's `)]}',\n` anti-XSSI prefix.
    public static var stripXSSIPrefix: XSSIPrefixPreprocessor { XSSIPrefixPreprocessor() }
}

extension ResponsePreprocessor where Self == ClosurePreprocessor {
    /// A preprocessor from a closure.
    /// - Parameter body: rewrites the response.
    public static func custom(_ body: @escaping @Sendable (ResponseContext) throws -> ResponseContext)
        -> ClosurePreprocessor
    {
        ClosurePreprocessor(body)
    }
}

extension ResponsePreprocessor where Self == EnvelopeRule {
    /// Unwraps `{"code":0,"msg":"ok","data":{…}}` into the `data` value; any other code
    /// becomes a `CourierError.apiError`. Other key names or codes: `EnvelopeRule.json(…)`.
    public static var envelope: EnvelopeRule { .json() }
}

import Foundation

/// Content negotiation: asks for any of several formats in `Accept` (with q-values in the
/// order given) and decodes with the one matching the response's `Content-Type`.
///
/// A response in a type none of them reads is a `CourierError.unacceptableContentType`.
/// A bodiless response goes to the first serializer (so ``Empty`` and optionals work).
public struct NegotiatingResponseSerializer<Output: Sendable>: ResponseSerializer {
    /// The candidates, most preferred first.
    let serializers: [any ResponseSerializer<Output>]

    /// - Parameter serializers: the candidates, most preferred first. An empty list fails
    ///   every call with `CourierError.configuration`.
    init(_ serializers: [any ResponseSerializer<Output>]) {
        self.serializers = serializers
    }

    /// Every candidate's types, without duplicates, in preference order.
    public var acceptableContentTypes: [String] {
        var seen = Set<String>()
        return serializers.flatMap(\.acceptableContentTypes).filter { seen.insert($0).inserted }
    }

    /// `application/json, application/x-protobuf;q=0.9, …`: each serializer's types get
    /// a q-value 0.1 lower than the previous serializer's (never below 0.1).
    public var acceptHeader: String? {
        var seen = Set<String>()
        var parts: [String] = []
        for (rank, serializer) in serializers.enumerated() {
            let quality = max(10 - rank, 1)
            let types = serializer.acceptableContentTypes.isEmpty ? ["*/*"] : serializer.acceptableContentTypes
            for type in types where seen.insert(type).inserted {
                parts.append(quality == 10 ? type : "\(type);q=0.\(quality)")
            }
        }
        return parts.joined(separator: ", ")
    }

    /// Decodes with the serializer matching the response's `Content-Type`.
    /// - Throws: `CourierError.unacceptableContentType` when none matches; the chosen
    ///   serializer's errors otherwise.
    public func serialize(_ context: ResponseContext) throws -> Output {
        guard let first = serializers.first else {
            throw CourierError(.configuration, "content negotiation was given no serializers")
        }
        if context.hasNoContent { return try first.serialize(context) }
        guard let header = context.response.headerFields[.contentType], let type = MediaType(parsing: header) else {
            throw CourierError(
                .unacceptableContentType,
                "the response has no Content-Type to negotiate on; the call reads \(acceptableContentTypes.joined(separator: ", "))",
                response: context.response, body: context.body)
        }
        for serializer in serializers {
            let patterns = serializer.acceptableContentTypes
            if patterns.isEmpty || MediaType.contentType(header, matchesAny: patterns) {
                return try serializer.serialize(context)
            }
        }
        throw CourierError(
            .unacceptableContentType,
            "no serializer reads \(type.essence); the call reads \(acceptableContentTypes.joined(separator: ", "))",
            response: context.response, body: context.body)
    }
}

extension ResponseSerializer {
    /// Content negotiation between serializers, most preferred first.
    /// - Parameter serializers: the candidates.
    public static func negotiating<Output>(
        _ serializers: any ResponseSerializer<Output>...
    ) -> Self where Self == NegotiatingResponseSerializer<Output> {
        NegotiatingResponseSerializer(serializers)
    }

    /// Content negotiation of a `Decodable` model between formats, most preferred first.
    /// - Parameters:
    ///   - type: the model type.
    ///   - formats: the formats, e.g. `[JSONModelDecoding.shared, ProtobufModelDecoding()]`.
    public static func negotiating<Model: Decodable & Sendable>(
        _ type: Model.Type, among formats: [any ModelDecoding]
    ) -> Self where Self == NegotiatingResponseSerializer<Model> {
        NegotiatingResponseSerializer(formats.map { DecodableResponseSerializer(type, anyDecoding: $0) })
    }
}

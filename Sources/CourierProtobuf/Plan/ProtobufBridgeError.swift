import Courier

/// An internal failure of the bridge, turned into a `CourierError` at the public boundary.
struct ProtobufBridgeError: Error, Sendable {
    var message: String
    /// Swift property names from the outermost message inwards (`posts.3.title`).
    var path: [String] = []

    static func invalidDescriptor(_ message: String) -> ProtobufBridgeError {
        ProtobufBridgeError(message: message)
    }

    static func typeMismatch(_ field: FieldPlan, in plan: MessagePlan, swiftType: Any.Type) -> ProtobufBridgeError {
        ProtobufBridgeError(
            message: "\(plan.fullName).\(field.protoName) is \(field.presence == .repeated ? "repeated " : "")"
                + "\(field.kind.protoName); the model's property '\(field.swiftName)' is \(swiftType)")
    }

    static func missingField(_ name: String, in plan: MessagePlan) -> ProtobufBridgeError {
        ProtobufBridgeError(message: "the model has a property '\(name)' that \(plan.fullName) does not define")
    }

    /// `error` (from a nested decode, or a model's own `init(from:)`) with `field` prepended.
    static func wrapping(_ error: any Error, plan: MessagePlan, field: FieldPlan) -> ProtobufBridgeError {
        if let error = error as? ProtobufBridgeError { return error.within(field.swiftName) }
        return ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName): \(error)", path: [field.swiftName])
    }

    /// Prepends a path component while the error travels up through nested messages.
    func within(_ component: String) -> ProtobufBridgeError {
        var copy = self
        copy.path.insert(component, at: 0)
        return copy
    }

    func courierError(_ code: CourierError.Code) -> CourierError {
        var error = CourierError(code, message)
        if !path.isEmpty { error.codingPath = path.joined(separator: ".") }
        return error
    }
}

/// Wraps any error thrown while decoding or encoding into a `CourierError` with `code`.
func courierError(_ error: any Error, _ code: CourierError.Code, _ type: Any.Type) -> CourierError {
    switch error {
    case let error as CourierError:
        return error
    case let error as ProtobufBridgeError:
        return error.courierError(code)
    case let error as DecodingError:
        var result = CourierError(code, "\(type): \(error)", underlying: error)
        result.codingPath = dottedPath(error.context.codingPath)
        return result
    case let error as EncodingError:
        var result = CourierError(code, "\(type): \(error)", underlying: error)
        if case .invalidValue(_, let context) = error { result.codingPath = dottedPath(context.codingPath) }
        return result
    default:
        return CourierError(code, "\(type): \(error)")
    }
}

private func dottedPath(_ path: [any CodingKey]) -> String {
    path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
}

extension DecodingError {
    fileprivate var context: DecodingError.Context {
        switch self {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            return context
        @unknown default:
            return DecodingError.Context(codingPath: [], debugDescription: "")
        }
    }
}

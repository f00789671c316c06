import Foundation
import HTTPTypes

/// Makes header fields and URLs safe to log: credentials are replaced by a marker.
public struct Redaction: Sendable {
    /// What replaces a secret.
    public static let marker = "<redacted>"
    /// Fields whose values are always redacted.
    public static let alwaysRedacted: Set<HTTPField.Name> = [
        .authorization, .cookie, .setCookie, .proxyAuthorization,
    ]

    /// Names redacted on top of `alwaysRedacted` (the client's sensitive headers).
    public var extraNames: Set<HTTPField.Name>

    public init(extraNames: Set<HTTPField.Name> = []) { self.extraNames = extraNames }

    /// Whether the value of `name` must not be logged.
    public func isRedacted(_ name: HTTPField.Name) -> Bool {
        Self.alwaysRedacted.contains(name) || extraNames.contains(name)
    }

    /// The fields as `Name: value` lines, secrets replaced.
    public func describe(_ fields: HTTPFields) -> String {
        fields.map { field in
            "\(field.name.rawName): \(isRedacted(field.name) ? Self.marker : field.value)"
        }.joined(separator: "\n")
    }

    /// The fields as logger metadata, secrets replaced.
    public func metadata(_ fields: HTTPFields) -> [String: String] {
        var result: [String: String] = [:]
        for field in fields {
            let value = isRedacted(field.name) ? Self.marker : field.value
            if let existing = result[field.name.canonicalName] {
                result[field.name.canonicalName] = existing + ", " + value
            } else {
                result[field.name.canonicalName] = value
            }
        }
        return result
    }

    /// A request target for logs: the query string, which often carries tokens, is hidden.
    public static func target(scheme: String?, authority: String?, path: String?) -> String {
        var path = path ?? "/"
        if let question = path.firstIndex(of: "?") {
            path = String(path[..<question]) + "?" + marker
        }
        return "\(scheme ?? "?")://\(authority ?? "?")\(path)"
    }
}

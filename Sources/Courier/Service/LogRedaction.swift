import HTTPTypes

/// Removes secrets from what the service layer logs: credential headers and query
/// parameters whose names say they hold a secret.
public struct LogRedaction: Sendable, Hashable {
    /// Header names whose values are replaced (compared case-insensitively).
    public var headerNames: Set<String>
    /// Query parameter names whose values are replaced (compared case-insensitively).
    public var queryNames: Set<String>

    public init(
        headerNames: Set<String> = LogRedaction.defaultHeaderNames,
        queryNames: Set<String> = LogRedaction.defaultQueryNames
    ) {
        self.headerNames = Set(headerNames.map { $0.lowercased() })
        self.queryNames = Set(queryNames.map { $0.lowercased() })
    }

    public static let defaultHeaderNames: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token",
    ]
    public static let defaultQueryNames: Set<String> = [
        "token", "access_token", "refresh_token", "id_token", "password", "secret", "client_secret", "api_key",
        "apikey", "key", "signature", "sig", "code",
    ]
    public static let `default` = LogRedaction()

    static let placeholder = "<redacted>"

    /// The request target with secret query values replaced.
    /// - Parameter target: a path with an optional query (`/login?token=abc`).
    /// - Returns: the redacted text.
    public func redact(target: String) -> String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        let query = target[target.index(after: mark)...]
        let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = RelativePath.percentDecoded(parts[0]).lowercased()
            guard parts.count == 2, queryNames.contains(name) else { return String(pair) }
            return "\(parts[0])=\(Self.placeholder)"
        }
        return target[..<mark] + "?" + pairs.joined(separator: "&")
    }

    /// The URL of a request with secret query values replaced.
    public func redactedURL(of request: HTTPRequest) -> String {
        "\(request.scheme ?? "")://\(request.authority ?? "")\(redact(target: request.path ?? "/"))"
    }

    /// Header fields as `Name: value` lines with secret values replaced.
    public func redact(_ fields: HTTPFields) -> [String] {
        fields.map { field in
            let value = headerNames.contains(field.name.canonicalName) ? Self.placeholder : field.value
            return "\(field.name.rawName): \(value)"
        }
    }

    /// A message with every occurrence of `secrets` replaced.
    public func redact(_ text: String, secrets: [String]) -> String {
        secrets.filter { !$0.isEmpty }.reduce(text) { $0.replacingOccurrences(of: $1, with: Self.placeholder) }
    }
}

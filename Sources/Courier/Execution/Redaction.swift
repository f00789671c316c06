import Foundation
import HTTPTypes

/// Makes header fields, URLs and messages safe to log: the values of credential headers and of
/// query parameters whose names say they hold a secret are replaced by a marker.
///
/// One list for the whole library: the client logs through its own (the names below plus every
/// credential field it knows, see `HTTPClient.credentialFieldNames`), and the logging event
/// monitor adds the same names for the calls of a service.
struct Redaction: Sendable, Hashable {
    /// What replaces a secret.
    static let marker = "<redacted>"
    /// Fields whose values are always redacted.
    static let alwaysRedacted: Set<HTTPField.Name> = [
        .authorization, .cookie, .setCookie, .proxyAuthorization,
    ]
    /// Header names that usually hold a secret, redacted by `Redaction.default`.
    static let commonSecretHeaderNames: Set<HTTPField.Name> = [
        HTTPField.Name("X-Api-Key")!, HTTPField.Name("X-Auth-Token")!,
    ]
    /// Query parameter names whose values are redacted by default (compared case-insensitively).
    static let defaultQueryNames: Set<String> = [
        "token", "access_token", "refresh_token", "id_token", "password", "secret", "client_secret", "api_key",
        "apikey", "key", "signature", "sig", "code",
    ]

    /// Names redacted on top of `alwaysRedacted` (the client's credential fields, …).
    var extraNames: Set<HTTPField.Name>
    /// Query parameter names whose values are replaced (lower-case; compared case-insensitively).
    var queryNames: Set<String>

    /// - Parameters:
    ///   - extraNames: header names to redact on top of `alwaysRedacted`.
    ///   - queryNames: query parameter names whose values are replaced.
    init(extraNames: Set<HTTPField.Name> = [], queryNames: Set<String> = Redaction.defaultQueryNames) {
        self.extraNames = extraNames
        self.queryNames = Set(queryNames.map { $0.lowercased() })
    }

    /// `alwaysRedacted`, `commonSecretHeaderNames` and `defaultQueryNames`.
    static let `default` = Redaction(extraNames: commonSecretHeaderNames)

    /// A copy that also redacts `names`.
    func adding(_ names: Set<HTTPField.Name>) -> Redaction {
        guard !names.isSubset(of: extraNames) else { return self }
        var copy = self
        copy.extraNames.formUnion(names)
        return copy
    }

    /// Whether the value of `name` must not be logged.
    func isRedacted(_ name: HTTPField.Name) -> Bool {
        Self.alwaysRedacted.contains(name) || extraNames.contains(name)
    }

    /// Whether the value of the query parameter (or general parameter) `name` must not be logged.
    func isRedacted(queryName name: some StringProtocol) -> Bool { queryNames.contains(name.lowercased()) }

    // MARK: Header fields

    /// Fields whose values are URLs, or lists of them: a server may echo the query a request
    /// carried (its credential, an `access_token`) into the next hop's `Location` or a `Link`.
    static let urlValuedNames: Set<HTTPField.Name> = [
        .location, .contentLocation, .referer, HTTPField.Name("Link")!, HTTPField.Name("Refresh")!,
    ]

    /// A field's value as logs may show it: a secret replaced, the query of a URL hidden, as
    /// in the client's request targets (`target(scheme:authority:path:)`).
    func loggableValue(of field: HTTPField) -> String {
        if isRedacted(field.name) { return Self.marker }
        if Self.urlValuedNames.contains(field.name) { return Self.hidingQueries(in: field.value) }
        return field.value
    }

    /// `value` with each query in it replaced by the marker: from a `?` to the end of its URL
    /// (the `>` that closes a URL in a `Link` value, or the end).
    static func hidingQueries(in value: String) -> String {
        guard value.contains("?") else { return value }
        var result = ""
        var inQuery = false
        for character in value {
            if inQuery {
                guard character == ">" else { continue }
                inQuery = false
            } else if character == "?" {
                result += "?" + marker
                inQuery = true
                continue
            }
            result.append(character)
        }
        return result
    }

    /// Header fields as `Name: value` lines, secrets replaced.
    func redact(_ fields: HTTPFields) -> [String] {
        fields.map { field in "\(field.name.rawName): \(loggableValue(of: field))" }
    }

    /// The fields as `Name: value` lines in one string, secrets replaced.
    func describe(_ fields: HTTPFields) -> String {
        redact(fields).joined(separator: "\n")
    }

    /// The fields as logger metadata, secrets replaced.
    func metadata(_ fields: HTTPFields) -> [String: String] {
        var result: [String: String] = [:]
        for field in fields {
            let value = loggableValue(of: field)
            if let existing = result[field.name.canonicalName] {
                result[field.name.canonicalName] = existing + ", " + value
            } else {
                result[field.name.canonicalName] = value
            }
        }
        return result
    }

    // MARK: URLs and text

    /// A request target for the client's logs: the whole query string, which often carries
    /// tokens, is hidden.
    static func target(scheme: String?, authority: String?, path: String?) -> String {
        var path = path ?? "/"
        if let question = path.firstIndex(of: "?") {
            path = String(path[..<question]) + "?" + marker
        }
        return "\(scheme ?? "?")://\(authority ?? "?")\(path)"
    }

    /// The request target with the values of secret query parameters replaced.
    /// - Parameter target: a path with an optional query (`/login?token=abc`).
    /// - Returns: the redacted text.
    func redact(target: String) -> String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        let query = target[target.index(after: mark)...]
        let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, isRedacted(queryName: RelativePath.percentDecoded(parts[0])) else {
                return String(pair)
            }
            return "\(parts[0])=\(Self.marker)"
        }
        return target[..<mark] + "?" + pairs.joined(separator: "&")
    }

    /// The URL of a request with the values of secret query parameters replaced.
    func redactedURL(of request: HTTPRequest) -> String {
        "\(request.scheme ?? "")://\(request.authority ?? "")\(redact(target: request.path ?? "/"))"
    }

    /// The longest server text quoted in an error's message.
    static let quotedLimit = 256

    /// Server text as an error's message quotes it (apps log it): control characters and line
    /// or paragraph separators become spaces, so that a server cannot forge log lines, and it
    /// is cut at `limit` characters, so that it cannot flood them. (An envelope's code and
    /// message; a value a decoder quotes, such as an enum's unknown raw value.)
    static func quoted(_ text: String, limit: Int = quotedLimit) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(limit + 1) {
            let breaks = scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}"
            scalars.append(breaks ? " " : scalar)
        }
        var quoted = String(scalars)
        if quoted.count > limit { quoted = String(quoted.prefix(limit)) + "…" }
        return quoted
    }

    /// A message with every occurrence of `secrets` replaced.
    func redact(_ text: String, secrets: [String]) -> String {
        secrets.filter { !$0.isEmpty }.reduce(text) { $0.replacingOccurrences(of: $1, with: Self.marker) }
    }
}

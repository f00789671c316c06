import Foundation
import HTTPTypes
@_spi(Reflection) import Swift
import Testing

@_spi(Fuzzing) @testable import Courier

/// What `print` and `dump` show of the configuration values an app may log while it debugs:
/// every setting, no secret. On the old code the default reflection showed the values of the
/// client's `defaultHeaders` and the service's `headers` (an API key), the service's general
/// parameters (`api_key=`) and the signing key's secret bytes.
@Suite struct ConfigurationDescriptionTests {
    static let apiKey = HTTPField.Name("X-Api-Key")!
    static let partner = HTTPField.Name("X-Partner-Secret")!

    /// `dump` and `print` of `value`, as one text.
    static func shown(_ value: some Any) -> String {
        var text = ""
        dump(value, to: &text)
        print(value, to: &text)
        debugPrint(value, to: &text)
        return text
    }

    /// Whether `text` (a `dump`) lists `secret`'s bytes, as it lists a `Data`'s.
    static func showsBytes(of secret: String, in text: String) -> Bool {
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.joined(separator: "\n").contains(secret.utf8.map { "- \($0)" }.joined(separator: "\n"))
    }

    /// The names of the stored properties of `type`.
    static func storedNames(of type: Any.Type) -> [String] {
        var names: [String] = []
        _ = _forEachField(of: type, options: []) { name, _, _, _ in
            names.append(String(cString: name))
            return true
        }
        return names
    }

    @Test func theClientsConfigurationShowsNoCredentialField() {
        let configuration = HTTPClient.Configuration(
            baseURL: URL(string: "https://api.example.com"),
            defaultHeaders: [
                .accept: "application/json", Self.apiKey: "client-api-key-1234", .authorization: "Basic c2VjcmV0",
                Self.partner: "partner-secret-5678",
            ],
            sensitiveHeaderNames: [Self.partner])
        let text = Self.shown(configuration)
        for secret in ["client-api-key-1234", "c2VjcmV0", "partner-secret-5678"] {
            #expect(!text.contains(secret), "\(secret) shown")
        }
        #expect(text.contains("application/json"))
        #expect(text.contains("X-Api-Key: \(Redaction.marker)"))
        #expect(text.contains("api.example.com"))
    }

    /// A field the `authorization` builder makes is a credential field of the client too.
    @Test func aFieldOfTheAuthorizationBuilderIsNotShown() {
        let token = HTTPField.Name("X-Session")!
        let configuration = HTTPClient.Configuration(
            defaultHeaders: [token: "session-value-42"], authorization: .custom { [HTTPField(name: token, value: $0)] })
        #expect(!Self.shown(configuration).contains("session-value-42"))
    }

    @Test func theServicesConfigurationShowsNoSecret() {
        var configuration = ServiceConfiguration()
        configuration.name = "feeds"
        configuration.headers = [Self.apiKey: "service-api-key-1234", .acceptLanguage: "de"]
        configuration.generalParameters = [("api_key", "general-key-5678"), ("platform", "linux")]
        configuration.signer = RequestSigner(key: .init(id: "key-one", secret: Data("signing-secret-90".utf8)))
        let text = Self.shown(configuration)
        for secret in ["service-api-key-1234", "general-key-5678", "signing-secret-90"] {
            #expect(!text.contains(secret), "\(secret) shown")
        }
        #expect(!Self.showsBytes(of: "signing-secret-90", in: text))
        for kept in ["feeds", "Accept-Language: de", "platform", "linux", "key-one"] {
            #expect(text.contains(kept), "\(kept) not shown")
        }
    }

    @Test func aSigningKeyShowsItsIDNotItsSecret() {
        let key = RequestSigner.Key(id: "key-two", secret: Data("another-secret-12".utf8))
        let text = Self.shown(key) + Self.shown(RequestSigner(key: key))
        #expect(!text.contains("another-secret-12"))
        #expect(!Self.showsBytes(of: "another-secret-12", in: text))
        #expect(text.contains("key-two"))
    }

    /// The live settings of a client and of a service, as `settings` returns them.
    @Test func theLiveSettingsShowNoSecretField() throws {
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(defaultHeaders: [Self.apiKey: "live-client-key-12", .accept: "a/b"])
        )
        let service = ServiceCore(
            client: client, configuration: ServiceConfiguration(headers: [.authorization: "Bearer live-token-34"]))
        let text = Self.shown(client.settings) + Self.shown(service.settings)
        #expect(!text.contains("live-client-key-12"))
        #expect(!text.contains("live-token-34"))
        #expect(text.contains("a/b"))
        for (type, value) in [
            (HTTPClient.Settings.self as Any.Type, client.settings as Any),
            (ServiceCore.Settings.self, service.settings),
        ] {
            let shown = Mirror(reflecting: value).children.compactMap(\.label)
            #expect(Set(Self.storedNames(of: type)) == Set(shown))
        }
    }

    /// A call's options: its own `Authorization` and API key, and a per-call server whose
    /// query holds a key. On the old code the default reflection showed them all.
    @Test func theCallOptionsShowNoPerCallSecret() throws {
        let server = try #require(URL(string: "https://other.example.com/v1?api_key=server-key-56&region=eu"))
        let options = CallOptions.default
            .with(
                \.headers, [.authorization: "Bearer per-call-token-12", Self.apiKey: "per-call-key-34", .accept: "a/b"]
            )
            .with(\.server, server)
            .with(\.timeout, .seconds(7))
        let text = Self.shown(options)
        for secret in ["per-call-token-12", "per-call-key-34", "server-key-56"] {
            #expect(!text.contains(secret), "\(secret) shown")
        }
        for kept in ["Accept: a/b", "other.example.com", "region=eu", "api_key=\(Redaction.marker)", "7.0 seconds"] {
            #expect(text.contains(kept), "\(kept) not shown")
        }
    }

    // The mirrors list every stored property: a setting added later is shown too, never
    // hidden by accident.

    @Test func everyStoredPropertyOfTheClientsConfigurationIsShown() {
        let shown = Mirror(reflecting: HTTPClient.Configuration()).children.compactMap(\.label)
        #expect(Set(Self.storedNames(of: HTTPClient.Configuration.self)) == Set(shown))
    }

    @Test func everyStoredPropertyOfTheServicesConfigurationIsShown() {
        let shown = Mirror(reflecting: ServiceConfiguration()).children.compactMap(\.label)
        #expect(Set(Self.storedNames(of: ServiceConfiguration.self)) == Set(shown))
    }

    @Test func everyStoredPropertyOfTheCallOptionsIsShown() {
        let shown = Mirror(reflecting: CallOptions.default).children.compactMap(\.label)
        #expect(Set(Self.storedNames(of: CallOptions.Fields.self)) == Set(shown))
    }
}

import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct RedactionTests {
    @Test func credentialsAreReplaced() {
        let fields: HTTPFields = [
            .authorization: "Bearer top-secret", .cookie: "session=abc", .setCookie: "id=1",
            .proxyAuthorization: "Basic Zm9v", .accept: "application/json",
            HTTPField.Name("X-Api-Key")!: "key-123",
        ]
        let text = Redaction(extraNames: [HTTPField.Name("X-Api-Key")!]).describe(fields)
        for secret in ["top-secret", "session=abc", "id=1", "Zm9v", "key-123"] {
            #expect(!text.contains(secret))
        }
        #expect(text.contains("Accept: application/json"))
        #expect(text.contains("Authorization: \(Redaction.marker)"))
        let metadata = Redaction().metadata(fields)
        #expect(metadata["authorization"] == Redaction.marker)
        #expect(metadata["x-api-key"] == "key-123")
    }

    @Test func queryIsHiddenInTargets() {
        let target = Redaction.target(scheme: "https", authority: "h", path: "/p?token=abc")
        #expect(target == "https://h/p?\(Redaction.marker)")
        #expect(Redaction.target(scheme: "http", authority: "h", path: "/p") == "http://h/p")
    }

    @Test func redactionOfTargets() {
        let redaction = Redaction.default
        #expect(redaction.redact(target: "/a") == "/a")
        #expect(redaction.redact(target: "/a?x=1&token=t&y") == "/a?x=1&token=<redacted>&y")
        #expect(redaction.redact(target: "/a?%74oken=t") == "/a?%74oken=<redacted>")
        #expect(redaction.redact("token abc in text", secrets: ["abc", ""]) == "token <redacted> in text")
    }

    @Test func defaultListRedactsCommonSecretHeadersAndAddedNames() {
        let partner = HTTPField.Name("X-Partner-Token")!
        let fields: HTTPFields = [
            HTTPField.Name("x-api-key")!: "k1", HTTPField.Name("X-Auth-Token")!: "k2", partner: "k3",
            .accept: "text/plain",
        ]
        #expect(
            Redaction.default.redact(fields) == [
                "x-api-key: <redacted>", "X-Auth-Token: <redacted>", "X-Partner-Token: k3", "Accept: text/plain",
            ])
        let added = Redaction.default.adding([partner])
        #expect(added.redact(fields)[2] == "X-Partner-Token: <redacted>")
        #expect(added.describe(fields).contains("Accept: text/plain"))
        #expect(added.queryNames == Redaction.defaultQueryNames)
        #expect(Redaction(queryNames: ["Sid"]).redact(target: "/a?sid=1&token=2") == "/a?sid=<redacted>&token=2")
    }
}

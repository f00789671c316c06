import HTTPTypes
import Testing

@testable import Courier

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
}

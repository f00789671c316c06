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

    /// A URL in a header value (`Location`, `Content-Location`, `Referer`, each URL of a
    /// `Link`) shows no query: a server may echo the request's credential into it.
    @Test func theQueriesOfURLsInHeaderValuesAreHidden() {
        let fields: HTTPFields = [
            .location: "/next?device=d-secret&page=2#top", .contentLocation: "https://h/a?access_token=t-secret",
            .referer: "https://h/p", HTTPField.Name("Link")!: "</p?page=2&sid=s1>; rel=\"next\", </p?sid=s2>; rel=last",
            .accept: "text/plain?q",
        ]
        let lines = Redaction.default.redact(fields)
        #expect(
            lines == [
                "Location: /next?\(Redaction.marker)", "Content-Location: https://h/a?\(Redaction.marker)",
                "Referer: https://h/p",
                "Link: </p?\(Redaction.marker)>; rel=\"next\", </p?\(Redaction.marker)>; rel=last",
                "Accept: text/plain?q",
            ])
        let metadata = Redaction.default.metadata(fields)
        #expect(metadata["location"] == "/next?\(Redaction.marker)")
    }

    /// `Refresh` (a redirect after a delay, which browsers and some APIs send) carries a URL
    /// too: its query is hidden as `Location`'s is. On the old code it was logged whole.
    @Test func theQueryOfARefreshURLIsHidden() {
        let fields: HTTPFields = [HTTPField.Name("Refresh")!: "0; url=/next?access_token=t-secret"]
        #expect(Redaction.default.redact(fields) == ["Refresh: 0; url=/next?\(Redaction.marker)"])
    }
}

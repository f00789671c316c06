import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct RequestValidationTests {
    @Test(arguments: ["a\rb", "a\nb", "a\0b", "x\r\nInjected: yes"])
    func rawHeaderValuesWithLineBreaksAreRefused(value: String) {
        #expect(throws: CourierError.self) { try RequestValidation.field(name: "X-Test", value: value) }
    }

    @Test(arguments: ["X\rTest", "X\nTest", "X\0Test", "Bad Name", ""])
    func invalidNamesAreRefused(name: String) {
        #expect(throws: CourierError.self) { try RequestValidation.field(name: name, value: "v") }
    }

    @Test func httpTypesRepairsValuesBuiltFromStrings() throws {
        // HTTPTypes turns CR/LF/NUL into spaces when a field is made from a String, so
        // an HTTPFields value cannot smuggle a line break; raw strings are refused instead.
        let field = HTTPField(name: .accept, value: "a\r\nb")
        #expect(field.value == "a  b")
        try RequestValidation.validate(field)
    }

    @Test func codableDecodedFieldsAreChecked() throws {
        let json = Data(#"{"name":"X-Test","value":"a\r\nInjected: 1"}"#.utf8)
        guard let field = try? JSONDecoder().decode(HTTPField.self, from: json) else {
            return  // This HTTPTypes version validates on decode: nothing can get through.
        }
        #expect(throws: CourierError.self) { try RequestValidation.validate(field) }
    }

    @Test(arguments: ["/a b", "/a\r\nX: y", "/a\0", "/a#frag", "/a\r\n", "/\0"])
    func badPathsAreRefusedOrDefused(path: String) {
        let request = HTTPRequest(method: .get, scheme: "http", authority: "h", path: path)
        // HTTPTypes already turns CR/LF/NUL into spaces (and trims them at the ends); whatever
        // is left must either be refused or free of them.
        let stored = request.path ?? ""
        let forbidden: Set<UInt8> = [0, 10, 13]
        let clean = !stored.utf8.contains(where: { forbidden.contains($0) })
        #expect(clean)
        if stored != "/a" && stored != "/" {
            #expect(throws: CourierError.self) { try RequestValidation.validate(request) }
        }
    }

    @Test(arguments: ["user:pw@h", "h\r\nX: y", "h/x", "", "h h"])
    func badAuthoritiesAreRefused(authority: String) {
        let request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/")
        #expect(throws: CourierError.self) { try RequestValidation.validate(request) }
    }

    @Test(arguments: ["ftp", "file", "gopher"])
    func onlyHTTPSchemes(scheme: String) {
        let request = HTTPRequest(method: .get, scheme: scheme, authority: "h", path: "/")
        #expect(throws: CourierError.self) { try RequestValidation.validate(request) }
    }

    @Test func setURLKeepsQueryAndBracketsIPv6() throws {
        var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: nil)
        try request.setURL(URL(string: "HTTP://[::1]:8080/a/b?x=1#frag")!)
        #expect(request.scheme == "http")
        #expect(request.authority == "[::1]:8080")
        #expect(request.path == "/a/b?x=1")
        try RequestValidation.validate(request)
    }

    @Test(arguments: [
        ("http", true), ("https", true), ("HTTP", true), ("hTtPs", true), ("", false), ("htt", false),
        ("httpx", false), ("https ", false), ("ftp", false), ("hxxp", false), ("httpss", false), ("h\u{0}tp", false),
    ])
    func schemesInAnyCaseAndNothingElse(_ scheme: String, _ allowed: Bool) {
        #expect(RequestValidation.isHTTPScheme(scheme) == allowed)
    }

    @Test(
        arguments: [
            ("api.example.com", "/v1/users?page=2", nil),
            ("api.example.com:8443", "/", nil),
            ("[::1]:8080", "/", nil),
            ("user@api.example.com", "/", "credentials in the URL"),
            ("api.example.com/evil", "/", "forbidden character"),
            ("api.example.com?x", "/", "forbidden character"),
            ("api.example.com\\x", "/", "forbidden character"),
            ("api example.com", "/", "forbidden character"),
            ("api.example.com", "/a b", "control character"),
            ("api.example.com", "/a#b", "control character"),
            ("api.example.com", "/é", nil),
        ] as [(String, String, String?)])
    func eachRefusalNamesItsReason(_ authority: String, _ path: String, _ refusal: String?) {
        let request = HTTPRequest(method: .get, scheme: "https", authority: authority, path: path)
        do {
            try RequestValidation.validate(request)
            #expect(refusal == nil, "let through")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(refusal.map { error.message.contains($0) } == true, "refused: \(error.message)")
        }
    }

    @Test func aMissingSchemeOrHostIsRefused() {
        for request in [
            HTTPRequest(method: .get, scheme: nil, authority: "api.example.com", path: "/"),
            HTTPRequest(method: .get, scheme: "https", authority: "", path: "/"),
            HTTPRequest(method: .get, scheme: "https", authority: nil, path: "/"),
        ] {
            #expect(throws: CourierError.self) { try RequestValidation.validate(request) }
        }
    }
}

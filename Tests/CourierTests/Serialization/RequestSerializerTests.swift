import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct RequestSerializerTests {
    @Test(arguments: [
        (HTTPRequest.Method.get, true), (.head, true), (.delete, true), (.post, false), (.put, false), (.patch, false),
        (.options, false),
    ])
    func methodDependentDestination(method: HTTPRequest.Method, query: Bool) {
        #expect(ParameterDestination.methodDependent.usesQueryString(for: method) == query)
        #expect(ParameterDestination.queryString.usesQueryString(for: method))
        #expect(!ParameterDestination.body.usesQueryString(for: method))
    }

    @Test(arguments: [
        ("/items", "/items?a=1"), ("/items?", "/items?a=1"), ("/items?x=2", "/items?x=2&a=1"),
        ("/items?x=2&", "/items?x=2&a=1"),
    ])
    func queriesAreAppended(path: String, expected: String) {
        var request = makeRequest(.get, path: path)
        request.appendQuery("a=1")
        #expect(request.head.path == expected)
        request.appendQuery("")
        #expect(request.head.path == expected)
    }

    @Test func formSerializerPlacesParametersByMethodAndOverride() throws {
        var get = makeRequest(.get)
        try RequestSerializerBox(.form).serialize(["q": "a b"], into: &get)
        #expect(get.head.path == "/items?q=a%20b")
        #expect(get.body == nil)

        var post = makeRequest(.post)
        try RequestSerializerBox(.form).serialize(["q": "a b"], into: &post)
        #expect(post.body?.inMemoryData == Data("q=a%20b".utf8))
        #expect(post.head.headerFields[.contentType] == "application/x-www-form-urlencoded")

        var forced = makeRequest(.delete)
        try RequestSerializerBox(.form(destination: .body)).serialize(["q": "x"], into: &forced)
        #expect(forced.body?.inMemoryData == Data("q=x".utf8))
        var query = makeRequest(.put)
        try RequestSerializerBox(.form(URLEncodedFormEncoder(spaces: .plus), destination: .queryString))
            .serialize(["q": "a b"], into: &query)
        #expect(query.head.path == "/items?q=a+b")

        let error = thrownError { try FormRequestSerializer().serialize([1, 2], into: &post) }
        #expect(error?.code == .encoding)
    }

    @Test func rawBodies() throws {
        var request = makeRequest(.put)
        try RequestSerializerBox(.raw()).serialize(Data([1, 2]), into: &request)
        #expect(request.body?.inMemoryData == Data([1, 2]))
        #expect(request.head.headerFields[.contentType] == "application/octet-stream")

        var text = makeRequest(.post)
        try RequestSerializerBox(.raw(contentType: "text/csv")).serialize("a,b\n1,2\n", into: &text)
        #expect(text.body?.inMemoryData == Data("a,b\n1,2\n".utf8))
        #expect(text.head.headerFields[.contentType] == "text/csv")

        var bytes = makeRequest(.post)
        try RawBodyRequestSerializer().serialize([UInt8]([9]), into: &bytes)
        #expect(bytes.body?.inMemoryData == Data([9]))

        let error = thrownError { try RawBodyRequestSerializer().serialize(["not": "bytes"], into: &bytes) }
        #expect(error?.code == .encoding)
        #expect(error?.message.contains("Data, [UInt8] or String") == true)
    }
}

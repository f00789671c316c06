import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct ValidationTests {
    struct APIError: Decodable, Sendable, Equatable {
        var code: Int
        var message: String
    }

    @Test func defaultAccepts2xxOnly() throws {
        for status in [200, 201, 299] {
            try ResponseValidator.default.validate(makeContext(status: status, body: "{}"))
        }
        for status in [199, 300, 304, 404, 500] {
            let error = thrownError {
                try ResponseValidator.default.validate(makeContext(status: status, body: "oops"))
            }
            #expect(error?.code == .httpStatus)
            #expect(error?.status?.code == status)
            #expect(error?.body == Data("oops".utf8))
            #expect(error?.response?.headerFields[.contentType] == "application/json")
        }
    }

    /// The context reads the status, HEAD and Content-Type once: they follow later changes.
    @Test func contextFollowsChangesToItsRequestAndResponse() throws {
        var context = makeContext(status: 200, body: "{}")
        #expect(context.statusCode == 200 && !context.isBodiless)
        context.response.status = .noContent
        #expect(context.statusCode == 204 && context.isBodiless && context.hasNoContent)
        context.response.status = .ok
        context.request.method = .head
        #expect(context.isBodiless)
        context.request.method = .get
        #expect(!context.isBodiless)
        try ResponseValidator.default.validate(context, serializerContentTypes: ["application/json"])
        context.response.headerFields[.contentType] = "text/html"
        #expect(
            thrownError {
                try ResponseValidator.default.validate(context, serializerContentTypes: ["application/json"])
            }?.code == .unacceptableContentType)
        // Two Content-Type fields are read joined, as HTTPFields' subscript gives them.
        context.response.headerFields[values: .contentType] = ["application/json", "text/html"]
        #expect(context.contentTypeField == "application/json, text/html")
        #expect(context.contentType == context.response.headerFields[.contentType].flatMap(MediaType.init(parsing:)))
        context.response.headerFields[.contentType] = nil
        #expect(context.contentTypeField == nil)
    }

    @Test func statusCodesAreConfigurablePerCall() throws {
        let validator = ResponseValidator(acceptableStatusCodes: [200..<300, 404..<405])
        try validator.validate(makeContext(status: 404, body: "{}"))
        #expect(thrownError { try validator.validate(makeContext(status: 403)) }?.code == .httpStatus)
        let chained = ResponseValidator.default.accepting(statusCodes: [300..<400]).accepting(contentTypes: ["text/*"])
        try chained.validate(makeContext(status: 302, contentType: "text/plain", body: "moved"))
        #expect(thrownError { try chained.validate(makeContext(status: 200, body: "{}")) }?.code == .httpStatus)
        #expect(
            thrownError { try chained.validate(makeContext(status: 301, body: "{}")) }?.code
                == .unacceptableContentType)
    }

    @Test func errorBodiesDecodeIntoTheNamedModel() throws {
        let validator = ResponseValidator.default.decodingErrors(as: APIError.self)
        let context = makeContext(status: 401, body: #"{"code": 4012, "message": "token expired"}"#)
        let error = thrownError {
            _ = try ResponsePipeline(validator: validator).process(context, with: .decodable(Address.self))
        }
        #expect(error?.code == .httpStatus)
        #expect(error?.errorModel(as: APIError.self) == APIError(code: 4012, message: "token expired"))

        // An error body that is not the model leaves errorModel nil but keeps the body.
        let html = makeContext(status: 502, contentType: "text/html", body: "<h1>Bad gateway</h1>")
        let other = thrownError { try validator.validate(html) }
        #expect(other?.errorModel == nil)
        #expect(other?.body == Data("<h1>Bad gateway</h1>".utf8))
    }

    @Test func contentTypesComeFromTheSerializerOrTheCall() throws {
        let html = makeContext(contentType: "text/html; charset=utf-8", body: "<p>")
        let error = thrownError { _ = try ResponsePipeline().process(html, with: .decodable(Address.self)) }
        #expect(error?.code == .unacceptableContentType)
        #expect(error?.message.contains("text/html") == true)
        #expect(error?.body == Data("<p>".utf8))
        // .data and .string accept anything.
        #expect(try ResponsePipeline().process(html, with: .string) == "<p>")

        let wildcard = ResponseValidator(acceptableContentTypes: ["text/*"])
        try wildcard.validate(html, serializerContentTypes: ["application/json"])
        try ResponseValidator(acceptableContentTypes: ["*/*"]).validate(
            html, serializerContentTypes: ["application/json"])
        let json = makeContext(body: "{}")
        #expect(thrownError { try wildcard.validate(json) }?.code == .unacceptableContentType)
    }

    @Test func missingContentTypeFailsOnlyWhenThereIsABody() throws {
        let validator = ResponseValidator(acceptableContentTypes: ["application/json"])
        #expect(
            thrownError { try validator.validate(makeContext(contentType: nil, body: "{}")) }?.code
                == .unacceptableContentType)
        try validator.validate(makeContext(status: 204, contentType: nil, body: ""))
        try validator.validate(makeContext(contentType: nil, body: ""))
        #expect(
            thrownError { try validator.validate(makeContext(contentType: "garbage", body: "x")) }?.code
                == .unacceptableContentType)
    }

    @Test func statusIsCheckedBeforeContentType() throws {
        let error = thrownError {
            try ResponseValidator.default.validate(
                makeContext(status: 500, contentType: "text/html", body: "x"),
                serializerContentTypes: ["application/json"])
        }
        #expect(error?.code == .httpStatus)
    }
}

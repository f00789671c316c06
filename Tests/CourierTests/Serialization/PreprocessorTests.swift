import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct PreprocessorTests {
    struct User: Decodable, Equatable, Sendable {
        var id: Int
        var name: String
    }

    let envelope = ResponsePipeline(preprocessors: [.envelope])

    @Test func envelopeUnwrapsDataWithoutCopying() throws {
        let context = makeContext(body: #"{"code":0,"msg":"ok","data":{"id":7,"name":"Ann \"A\" 😀"}}"#)
        #expect(try envelope.process(context, with: .decodable(User.self)) == User(id: 7, name: "Ann \"A\" 😀"))
        let unwrapped = try EnvelopeRule.json().preprocess(context)
        #expect(String(decoding: unwrapped.body, as: UTF8.self) == #"{"id":7,"name":"Ann \"A\" 😀"}"#)
        // A slice of the received buffer, not a new one.
        let sameStorage = context.body.withUnsafeBytes { whole in
            unwrapped.body.withUnsafeBytes { part in
                part.baseAddress! > whole.baseAddress! && part.baseAddress! < whole.baseAddress! + whole.count
            }
        }
        #expect(sameStorage)
    }

    @Test func envelopeWithWhitespaceArraysAndOrder() throws {
        let context = makeContext(
            body: " {\n \"data\" : [1, {\"x\": [true, null]}, \"]}\"] ,\"code\": \"0\" , \"msg\": null }\n")
        let body = try EnvelopeRule.json().preprocess(context).body
        #expect(String(decoding: body, as: UTF8.self) == #"[1, {"x": [true, null]}, "]}"]"#)
    }

    @Test func envelopeFailureCodesBecomeAPIErrors() throws {
        let context = makeContext(body: #"{"code":4012,"msg":"token expired","data":null}"#)
        let error = thrownError { _ = try envelope.process(context, with: .decodable(User.self)) }
        #expect(error?.code == .apiError)
        #expect(error?.message == "the server reported code 4012: token expired")
        #expect(error?.errorModel(as: EnvelopeFailure.self) == EnvelopeFailure(code: "4012", message: "token expired"))
        #expect(error?.response?.status.code == 200)
        #expect(error?.body == context.body)
    }

    @Test func envelopeKeysAndSuccessCodesAreConfigurable() throws {
        let custom = ResponsePipeline(
            preprocessors: [
                EnvelopeRule.json(
                    codeKey: "status", messageKey: "error", payloadKey: "result", successCodes: ["200", "OK"])
            ])
        let ok = makeContext(body: #"{"status":"OK","result":{"id":1,"name":"x"}}"#)
        #expect(try custom.process(ok, with: .decodable(User.self)) == User(id: 1, name: "x"))
        let failed = thrownError {
            _ = try custom.process(makeContext(body: #"{"status":500,"error":"boom"}"#), with: .data)
        }
        #expect(failed?.errorModel(as: EnvelopeFailure.self)?.message == "boom")
    }

    @Test func envelopeWithoutDataDecodesEmpty() throws {
        for body in [#"{"code":0,"msg":"ok"}"#, #"{"code":0,"data":null}"#] {
            let context = makeContext(body: body)
            #expect(try envelope.process(context, with: .decodable(Empty.self)) == Empty())
            #expect(try envelope.process(context, with: .decodable(User?.self)) == nil)
            #expect(thrownError { _ = try envelope.process(context, with: .decodable(User.self)) }?.code == .emptyBody)
        }
    }

    @Test(arguments: [
        #"[1,2]"#, #"{"code":0"#, #"{"data":{}}"#, "<html>", #"{"code":0} trailing"#,
        #"{"code":0,"data":"unterminated}"#,
    ])
    func malformedEnvelopesAreDecodingErrors(body: String) throws {
        let error = thrownError { _ = try envelope.process(makeContext(body: body), with: .data) }
        #expect(error?.code == .decoding)
    }

    @Test func bodilessResponsesSkipPreprocessing() throws {
        #expect(try envelope.process(makeContext(status: 204, body: ""), with: .decodable(Empty.self)) == Empty())
    }

    @Test func xssiPrefixIsStripped() throws {
        let pipeline = ResponsePipeline(preprocessors: [.stripXSSIPrefix])
        let prefixed = makeContext(body: ")]}',\n{\"id\":1,\"name\":\"a\"}")
        #expect(try pipeline.process(prefixed, with: .decodable(User.self)) == User(id: 1, name: "a"))
        let plain = makeContext(body: "{\"id\":2,\"name\":\"b\"}")
        #expect(try pipeline.process(plain, with: .decodable(User.self)) == User(id: 2, name: "b"))
        let custom = ResponsePipeline(preprocessors: [XSSIPrefixPreprocessor(prefix: "while(1);")])
        #expect(try custom.process(makeContext(body: "while(1);[1]"), with: .decodable([Int].self)) == [1])
    }

    @Test func slicedBodiesDecodeInEveryFormat() throws {
        let pipeline = ResponsePipeline(preprocessors: [.stripXSSIPrefix])
        let form = makeContext(contentType: "application/x-www-form-urlencoded", body: ")]}',\ncity=Oslo&zip=0150")
        #expect(try pipeline.process(form, with: .form(Address.self)) == Address(city: "Oslo", zip: "0150"))
        let text = makeContext(
            contentType: "text/plain; charset=iso-8859-1", bytes: Data(")]}',\n".utf8) + Data([0xE9]))
        #expect(try pipeline.process(text, with: .string) == "é")
        let envelope = makeContext(body: ")]}',\n{\"code\":0,\"data\":{\"code\":0,\"data\":[1,2]}}")
        let twice = ResponsePipeline(preprocessors: [.stripXSSIPrefix, .envelope, .envelope])
        #expect(try twice.process(envelope, with: .decodable([Int].self)) == [1, 2])
    }

    @Test func preprocessorsComposeInOrderAcrossLevels() throws {
        let client = ResponsePipeline(preprocessors: [.stripXSSIPrefix])
        let service = client.adding(preprocessors: [.envelope])
        let call = service.adding(preprocessors: [
            .custom { context in
                var copy = context
                copy.body = Data(String(decoding: context.body, as: UTF8.self).uppercased().utf8)
                return copy
            }
        ])
        let context = makeContext(body: ")]}',\n{\"code\":0,\"data\":\"quiet\"}")
        #expect(try call.process(context, with: .decodable(String.self)) == "QUIET")
        #expect(try service.process(context, with: .decodable(String.self)) == "quiet")
        #expect(call.preprocessors.count == 3)
    }

    @Test func validationRunsBeforePreprocessing() throws {
        let pipeline = ResponsePipeline(preprocessors: [
            .custom { _ in throw CourierError(.configuration, "must not run") }
        ])
        #expect(
            thrownError { _ = try pipeline.process(makeContext(status: 500, body: "x"), with: .data) }?.code
                == .httpStatus)
        #expect(thrownError { _ = try pipeline.process(makeContext(body: "x"), with: .data) }?.code == .configuration)
    }
}

@Suite struct EnvelopeHostileInputTests {
    @Test func deepNestingAndTruncationFailCleanly() throws {
        let deep = #"{"code":0,"data":"# + String(repeating: "[", count: 100_000) + "}"
        let error = thrownError { _ = try EnvelopeRule.json().preprocess(makeContext(body: deep)) }
        #expect(error?.code == .decoding)
        #expect((error?.underlying as? CustomStringConvertible)?.description.contains("nested too deeply") == true)
        for body in [#"{"code":0,"data":"\"#, #"{"code""#, "{", #"{"code":0,"data":{"a":}"#, #"{"code":,}"#] {
            #expect(
                thrownError { _ = try EnvelopeRule.json().preprocess(makeContext(body: body)) }?.code == .decoding)
        }
    }
}

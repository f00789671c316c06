import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct NegotiationTests {
    let serializer = NegotiatingResponseSerializer<Address>.negotiating(
        Address.self, among: [JSONModelDecoding.shared, URLEncodedFormModelDecoding()])

    @Test func acceptHeaderListsEveryTypeWithQValues() {
        #expect(serializer.acceptHeader == "application/json, text/json, application/x-www-form-urlencoded;q=0.9")
        #expect(
            serializer.acceptableContentTypes == ["application/json", "text/json", "application/x-www-form-urlencoded"])
    }

    @Test func picksTheSerializerByContentType() throws {
        let json = makeContext(contentType: "application/json; charset=utf-8", body: #"{"city":"A","zip":"1"}"#)
        let form = makeContext(contentType: "application/x-www-form-urlencoded", body: "city=B&zip=2")
        #expect(try ResponsePipeline().process(json, with: serializer) == Address(city: "A", zip: "1"))
        #expect(try ResponsePipeline().process(form, with: serializer) == Address(city: "B", zip: "2"))
    }

    @Test func unknownTypesAreClearErrors() throws {
        let xml = makeContext(contentType: "application/xml", body: "<a/>")
        let direct = thrownError { _ = try serializer.serialize(xml) }
        #expect(direct?.code == .unacceptableContentType)
        #expect(direct?.message.contains("application/xml") == true)
        let viaPipeline = thrownError { _ = try ResponsePipeline().process(xml, with: serializer) }
        #expect(viaPipeline?.code == .unacceptableContentType)
        #expect(
            thrownError { _ = try serializer.serialize(makeContext(contentType: nil, body: "x")) }?.code
                == .unacceptableContentType)
    }

    @Test func mixesArbitrarySerializersOfOneOutput() throws {
        let text = NegotiatingResponseSerializer<String>.negotiating(
            DecodableResponseSerializer.json(String.self), StringResponseSerializer.string)
        #expect(text.acceptHeader == "application/json, text/json, */*;q=0.9")
        #expect(try text.serialize(makeContext(body: #""quoted""#)) == "quoted")
        #expect(try text.serialize(makeContext(contentType: "text/plain", body: "plain")) == "plain")
    }

    @Test func emptyBodiesGoToTheFirstSerializer() throws {
        let optional = NegotiatingResponseSerializer<Address?>.negotiating(
            Address?.self, among: [JSONModelDecoding.shared])
        #expect(try optional.serialize(makeContext(status: 204, contentType: nil, body: "")) == nil)
        let none = NegotiatingResponseSerializer<Address>([])
        #expect(thrownError { _ = try none.serialize(makeContext(body: "{}")) }?.code == .configuration)
    }
}

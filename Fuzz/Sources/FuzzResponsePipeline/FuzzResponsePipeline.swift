@_spi(Fuzzing) import Courier
import Foundation
import FuzzSupport
import HTTPTypes

// A response is server input end to end: status, header fields and body all come from the
// fuzzer, then go through validation, preprocessing (XSSI prefix, envelope) and a serializer.
// The outcome is a value or a `CourierError`, never a trap.
//
// Input layout: 4 choice bytes, a 2-byte status, header lines `name: value` each ended by
// `\n` up to an empty line, then the body.

struct Item: Codable, Sendable {
    var id: Int?
    var name: String?
    var tags: [String]?
    var child: [String: Double]?
}

struct ServerError: Decodable, Sendable {
    var code: Int?
    var message: String?
}

func headers(_ input: inout FuzzInput) -> HTTPFields {
    var fields = HTTPFields()
    while !input.isAtEnd {
        let line = input.field(until: UInt8(ascii: "\n"))
        if line.isEmpty { break }
        let text = String(decoding: line, as: UTF8.self)
        guard let colon = text.firstIndex(of: ":"), let name = HTTPField.Name(String(text[..<colon])) else { continue }
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        fields.append(HTTPField(name: name, value: value))
    }
    return fields
}

func run<S: ResponseSerializer>(_ pipeline: ResponsePipeline, _ context: ResponseContext, _ serializer: S) {
    do {
        _ = try pipeline.process(context, with: serializer)
    } catch let error as CourierError {
        // Descriptions are built from server bytes too: they must not trap either.
        _ = String(describing: error)
    } catch {
        fatalError("the response pipeline threw a non-Courier error: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponsePipeline(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data: data, size: size)
    let serializerChoice = input.choice(7)
    let preprocessing = input.byte()
    let withErrorModel = input.flag()
    let method: HTTPRequest.Method = input.flag() ? .head : .get
    let status = Int(input.u16() % 1000)
    let fields = headers(&input)
    let body = Data(input.rest())

    var preprocessors: [any ResponsePreprocessor] = []
    if preprocessing & 1 != 0 { preprocessors.append(.stripXSSIPrefix) }
    if preprocessing & 2 != 0 { preprocessors.append(.envelope) }
    var validator = ResponseValidator.default
    if withErrorModel { validator = validator.decodingErrors(as: ServerError.self) }
    if preprocessing & 4 != 0 { validator = validator.accepting(statusCodes: [100..<600]) }
    let pipeline = ResponsePipeline(validator: validator, preprocessors: preprocessors)

    guard (100...999).contains(status) else { return 0 }
    let request = HTTPRequest(method: method, scheme: "https", authority: "fuzz.example", path: "/item")
    let response = HTTPResponse(status: .init(code: status), headerFields: fields)
    let context = ResponseContext(request: request, response: response, body: body)
    _ = context.contentType

    switch serializerChoice {
    case 0: run(pipeline, context, .json(Item.self))
    case 1: run(pipeline, context, .form(Item.self))
    case 2: run(pipeline, context, .string)
    case 3: run(pipeline, context, .data)
    case 4:
        run(
            pipeline, context,
            .negotiating(Item.self, among: [JSONModelDecoding.json, URLEncodedFormModelDecoding()]))
    case 5: run(pipeline, context, .json([Item].self))
    default: run(pipeline, context, .json(Empty.self))
    }
    return 0
}

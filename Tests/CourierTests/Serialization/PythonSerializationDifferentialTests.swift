import CourierTesting
import Foundation
import Testing

@testable import Courier

/// Courier's form and multipart serializers against the parsers of Python's standard library,
/// which many servers run, on random values scripts/serialization-differential.py makes: every
/// Unicode plane, the form's separators, empty strings, nested arrays and objects in every
/// style; hostile multipart names, file names, contents and boundaries. Python reads what
/// Courier writes as the value it was, and Courier reads what Python writes.
@Suite(.enabled(if: PythonStandardLibrary.python != nil, "needs python3"))
struct PythonSerializationDifferentialTests {
    /// Fixed, so that a failure repeats; `COURIER_DIFFERENTIAL_SEED` tries others.
    static let seed = ProcessInfo.processInfo.environment["COURIER_DIFFERENTIAL_SEED"].flatMap { Int($0) } ?? 18
    static let count = 400

    @Test func pythonReadsTheFormsCourierWrites() throws {
        let arguments = ["\(Self.seed)", "\(Self.count)"]
        let cases = try JSONDecoder().decode(
            [FormCase].self, from: PythonStandardLibrary.run(["form-values"] + arguments))
        #expect(cases.count == Self.count)
        let queries = try cases.map { item in try item.encoder.encodeQuery(item.value) }
        let problems = try PythonStandardLibrary.check("form-check", arguments, queries)
        #expect(problems.isEmpty, "\(problems.count) problems:\n\(problems.prefix(5).joined(separator: "\n"))")
    }

    @Test func courierReadsTheFormsPythonWrites() throws {
        struct Query: Decodable {
            var query: String
            var pairs: [[String]]
        }
        let queries = try JSONDecoder().decode(
            [Query].self, from: PythonStandardLibrary.run(["form-queries", "\(Self.seed)", "\(Self.count)"]))
        #expect(queries.count == Self.count)
        for (index, item) in queries.enumerated() {
            let decoded = try URLEncodedFormDecoder().decode([String: String].self, fromQuery: item.query)
            // By scalars: Swift's `==` on strings is canonical equivalence, laxer than Python's.
            let read = Dictionary(
                uniqueKeysWithValues: decoded.map { (Array($0.key.unicodeScalars), Array($0.value.unicodeScalars)) })
            let expected = Dictionary(
                uniqueKeysWithValues: item.pairs.map { (Array($0[0].unicodeScalars), Array($0[1].unicodeScalars)) })
            #expect(read == expected, "query \(index) \(item.query): read \(decoded), Python wrote \(item.pairs)")
        }
    }

    @Test func pythonReadsTheMultipartBodiesCourierWrites() throws {
        let arguments = ["\(Self.seed)", "\(Self.count)"]
        let forms = try JSONDecoder().decode(
            [MultipartCase].self, from: PythonStandardLibrary.run(["multipart-forms"] + arguments))
        #expect(forms.count == Self.count)
        #expect(forms.contains(where: \.refused) && forms.contains(where: { !$0.refused }))
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("courier-multipart-\(UUID())")
        defer { try? FileManager.default.removeItem(at: files) }
        var written: [[String: String]?] = []
        for (index, item) in forms.enumerated() {
            let form = try item.form(files: files.appendingPathComponent("\(index)"))
            var request = makeRequest()
            do {
                try MultipartRequestSerializer().serialize(form, into: &request)
            } catch let error as CourierError {
                #expect(error.code == .encoding, "form \(index): \(error)")
                written.append(nil)
                continue
            }
            let contentType = try #require(request.head.headerFields[.contentType])
            written.append(["contentType": contentType, "body": try materialize(request.body).base64EncodedString()])
        }
        let problems = try PythonStandardLibrary.check("multipart-check", arguments, written)
        #expect(problems.isEmpty, "\(problems.count) problems:\n\(problems.prefix(5).joined(separator: "\n"))")
    }
}

/// One random keyed value and the encoder options to write it with.
struct FormCase: Decodable {
    /// Encoded through `Encodable` as a model of its shape would be.
    var value: AnyJSON
    var nesting: String
    var arrays: String
    var bools: String
    var spaces: String

    var encoder: URLEncodedFormEncoder {
        URLEncodedFormEncoder(
            nesting: nesting == "dots" ? .dots : .brackets,
            arrays: arrays == "indexed" ? .indexed : arrays == "repeated" ? .repeated : .brackets,
            bools: bools == "numeric" ? .numeric : .literal,
            spaces: spaces == "plus" ? .plus : .percentEncoded)
    }
}

/// One random multipart form: its parts and an optional custom boundary.
struct MultipartCase: Decodable {
    struct Part: Decodable {
        var kind: String
        var name: String
        var fileName: String?
        var contentType: String?
        var content: String
    }

    var boundary: String?
    var parts: [Part]
    var refused: Bool

    /// The form; file parts are written to `files/<part>/upload.bin`.
    func form(files: URL) throws -> MultipartFormData {
        var form = boundary.map { MultipartFormData(boundary: $0) } ?? MultipartFormData()
        for (index, part) in parts.enumerated() {
            let content = try #require(Data(base64Encoded: part.content))
            switch part.kind {
            case "text":
                form.append(String(decoding: content, as: UTF8.self), name: part.name)
            case "data":
                form.append(content, name: part.name, fileName: part.fileName, contentType: part.contentType)
            default:
                let folder = files.appendingPathComponent("\(index)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let file = folder.appendingPathComponent("upload.bin")
                try content.write(to: file)
                form.appendFile(at: file.path, name: part.name, fileName: part.fileName, contentType: part.contentType)
            }
        }
        return form
    }
}

/// python3 and scripts/serialization-differential.py run with it (the standard library only).
enum PythonStandardLibrary {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/serialization-differential.py").path

    /// The first python3 on `PATH`, then Debian's, that runs.
    static let python: String? = {
        let candidates = [ChildProcess.find("python3"), "/usr/bin/python3"].compactMap { $0 }
        return candidates.first { python in (try? ChildProcess.run(python, ["-c", "pass"]).status) == 0 }
    }()

    /// The script's standard output; throws when it fails.
    static func run(_ arguments: [String]) throws -> Data {
        let python = try #require(python)
        let (status, output) = try ChildProcess.run(python, [script] + arguments, capture: .capture)
        try #require(
            status == 0, "serialization-differential.py \(arguments.joined(separator: " ")) exited with \(status)")
        return output
    }

    /// Hands `written` to the script's `command` in a file; returns the problems it found.
    static func check(_ command: String, _ arguments: [String], _ written: some Encodable) throws -> [String] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-differential-\(UUID()).json")
        try JSONEncoder().encode(written).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try JSONDecoder().decode([String].self, from: run([command] + arguments + [file.path]))
    }
}

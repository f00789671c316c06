import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A file part whose file changes between the moment the body's length is measured and the
/// moment its bytes are read: the parts after it must arrive as built, or the call must fail.
@Suite struct MultipartFileChangeTests {
    /// A server that answers with the body it received, and a client for it.
    final class Harness: Sendable {
        let server: TestServer
        let client: HTTPClient
        let directory: String

        init() throws {
            server = try TestServer()
            server.route("/raw") { request in
                ScriptedResponse(headers: [.contentType: "application/octet-stream"], body: request.body)
            }
            var configuration = HTTPClient.Configuration()
            configuration.baseURL = server.baseURL
            client = try HTTPClient(configuration: configuration)
            directory =
                FileManager.default.temporaryDirectory.appendingPathComponent("courier-multipart-\(UUID())")
                .path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Sends `body` to `/raw`, running `change` once, on the first upload progress report
        /// (before the file part is read: a large in-memory part comes first).
        /// - Returns: the bytes the server received, and how many body bytes had gone out when
        ///   `change` ran.
        func send(_ body: RequestBody, contentType: String, change: @escaping @Sendable () -> Void) async throws
            -> (received: Data, sentBeforeChange: Int64?)
        {
            let sentBeforeChange = LockedValue<Int64?>(nil)
            let options = CallOptions(uploadProgress: { progress in
                let runs = sentBeforeChange.withLock { sent -> Bool in
                    guard sent == nil else { return false }
                    sent = progress.completed
                    return true
                }
                if runs { change() }
            })
            var head = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/raw")
            head.headerFields[.contentType] = contentType
            let response = try await client.send(head, body: body, options: options)
            return (response.body, sentBeforeChange.withLock { $0 })
        }
    }

    /// Made for each form, not kept in a global: a `Data` kept only in a `static let` looks
    /// unreachable to LeakSanitizer (scripts/sanitizers/lsan.supp says why).
    static var leading: Data { TestServer.bytePattern(count: 3 << 20) }

    /// A form with a large data part, the file part, and a text field after it.
    static func form(file path: String) -> MultipartFormData {
        var form = MultipartFormData(boundary: "courier-change-boundary")
        form.append(leading, name: "leading", fileName: "leading.bin")
        form.appendFile(at: path, name: "log", contentType: "text/plain")
        form.append("after the file", name: "trailer")
        return form
    }

    /// A log file the app keeps writing while it uploads it: the bytes appended after the
    /// length was measured pushed the rest of the body out (the last part and the closing
    /// boundary were cut at the announced length), so the server got a broken form. Now the
    /// file part sends the file as long as it was when measured, and the form arrives whole.
    @Test func aFileThatGrowsWhileSentLeavesTheRestOfTheFormIntact() async throws {
        let harness = try Harness()
        let path = harness.directory + "/app.log"
        let original = Data(String(repeating: "line of the log\n", count: 100).utf8)
        #expect(FileManager.default.createFile(atPath: path, contents: original))
        let form = Self.form(file: path)
        let body = try form.makeBody()
        let expected = try materialize(body)

        let (received, sentBeforeChange) = try await harness.send(body, contentType: form.contentType) {
            guard let handle = FileHandle(forWritingAtPath: path) else { return }
            handle.seekToEndOfFile()
            handle.write(Data(String(repeating: "written while uploading\n", count: 50).utf8))
            handle.closeFile()
        }
        // The file grew before its part was read (the leading part goes first).
        let sent = try #require(sentBeforeChange)
        #expect(sent < Int64(Self.leading.count) / 2)
        #expect(received.count == expected.count)
        #expect(received == expected, "the form arrived changed")
        #expect(String(decoding: received.suffix(200), as: UTF8.self).hasSuffix("--courier-change-boundary--\r\n"))
    }

    /// A file that shrank, with another that grew by as much after it: the total length was
    /// the announced one, and the server got both parts wrong without an error. Now a file
    /// that ends before its measured size fails the call.
    @Test func aFileThatShrinksWhileSentFailsTheCall() async throws {
        let harness = try Harness()
        let first = harness.directory + "/first.txt"
        let second = harness.directory + "/second.txt"
        #expect(FileManager.default.createFile(atPath: first, contents: Data(repeating: 0x61, count: 2_000)))
        #expect(FileManager.default.createFile(atPath: second, contents: Data(repeating: 0x62, count: 2_000)))
        var form = Self.form(file: first)
        form.appendFile(at: second, name: "second", contentType: "text/plain")
        let body = try form.makeBody()

        let error = await #expect(throws: CourierError.self) {
            _ = try await harness.send(body, contentType: form.contentType) {
                // The first file loses 500 bytes; the second gains them.
                truncate(first, 1_500)
                if let handle = FileHandle(forWritingAtPath: second) {
                    handle.seekToEndOfFile()
                    handle.write(Data(repeating: 0x63, count: 500))
                    handle.closeFile()
                }
            }
        }
        #expect(error?.code == .invalidRequest)
    }
}

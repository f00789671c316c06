import Courier
import Foundation
import HTTPTypes

// The code samples of Docs/LargeBodies.md, compiled so the guide cannot drift from the API.
// Not run (they talk to example hosts); LargeBodyTests runs the same calls on loopback.

enum LargeBodiesSamples {
    static func download(client: HTTPClient, fileURL: URL) async throws {
        var options = CallOptions()
        options.maxResponseSize = 8 << 30  // the client's cap (64 MiB by default) applies to downloads too
        options.timeout = .seconds(3600)  // the total timeout covers the whole body
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/exports/2026.tar")
        let transfer = client.download(request, to: fileURL, options: options)
        for await progress in transfer.progress {
            print("\(progress.completed) of \(progress.total ?? -1)")
        }
        let response = try await transfer.response  // the head; the bytes are in fileURL
        _ = response
    }

    static func upload(client: HTTPClient, dumpPath: String, compressedChunks: AsyncStream<Data>) async throws {
        // A file: read while sending, with Content-Length; can be sent again (retries, 307/308).
        let put = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/backups/db.dump")
        let file = client.upload(put, body: .file(path: dumpPath))

        // Any AsyncSequence of Data: chunked transfer encoding, or Content-Length when given.
        let post = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/ingest")
        let stream = client.upload(post, body: .stream(compressedChunks, length: nil))
        _ = try await (file.response, stream.response)
    }
}

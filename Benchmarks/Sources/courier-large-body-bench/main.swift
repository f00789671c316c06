import Courier
import Foundation
import HTTPTypes

// Peak resident memory of one large transfer, one transfer per process (VmHWM is a process's
// high-water mark): `courier-large-body-bench MODE --url URL --bytes N [--file PATH]`.
//
//   download       GET URL into PATH.download (deleted afterwards)
//   upload-file    PUT the file PATH to URL
//   upload-stream  PUT N bytes from an AsyncSequence of 256 KiB chunks (chunked) to URL
//
// Prints one line: mode, bytes, seconds, VmRSS before the transfer and VmHWM after it (KiB).
// scripts/large-bodies.sh runs it through nginx for 64 MiB and 1 GiB.

/// A field of /proc/self/status in KiB.
func status(_ field: String) -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
    return 0
}

struct Arguments {
    var mode = ""
    var url: URL?
    var bytes: Int64 = 0
    var file = ""

    init() {
        var list = Array(CommandLine.arguments.dropFirst())
        mode = list.isEmpty ? "" : list.removeFirst()
        while list.count >= 2 {
            let (name, value) = (list.removeFirst(), list.removeFirst())
            switch name {
            case "--url": url = URL(string: value)
            case "--bytes": bytes = Int64(value) ?? 0
            case "--file": file = value
            default: break
            }
        }
    }
}

/// `count` bytes in 256 KiB chunks, made as they are pulled (the sequence never holds more).
struct GeneratedChunks: AsyncSequence, Sendable {
    let count: Int64
    static let chunk = Data((0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 % 251) })

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: Int64
        mutating func next() async -> Data? {
            guard remaining > 0 else { return nil }
            let size = Int(Swift.min(remaining, Int64(GeneratedChunks.chunk.count)))
            remaining -= Int64(size)
            return size == GeneratedChunks.chunk.count ? GeneratedChunks.chunk : GeneratedChunks.chunk.prefix(size)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: count) }
}

let arguments = Arguments()
guard let url = arguments.url, arguments.bytes > 0 else {
    FileHandle.standardError.write(
        Data(
            "usage: courier-large-body-bench download|upload-file|upload-stream --url URL --bytes N [--file PATH]\n"
                .utf8))
    exit(2)
}
let client = try HTTPClient(configuration: .init(timeout: .seconds(600)))
func request(_ method: HTTPRequest.Method) -> HTTPRequest {
    HTTPRequest(
        method: method, scheme: url.scheme, authority: "\(url.host ?? ""):\(url.port ?? 80)", path: url.path)
}
let options = CallOptions(maxResponseSize: arguments.bytes + 1)
let before = status("VmRSS")
let start = ContinuousClock.now
let transfer: HTTPClient.Transfer
switch arguments.mode {
case "download":
    transfer = client.download(request(.get), to: URL(fileURLWithPath: arguments.file + ".download"), options: options)
case "upload-file":
    transfer = client.upload(request(.put), body: .file(path: arguments.file), options: options)
case "upload-stream":
    transfer = client.upload(request(.put), body: .stream(GeneratedChunks(count: arguments.bytes)), options: options)
default:
    FileHandle.standardError.write(Data("unknown mode \(arguments.mode)\n".utf8))
    exit(2)
}
var last: TransferProgress?
var updates = 0
for await value in transfer.progress {
    last = value
    updates += 1
}
let response = try await transfer.response
let seconds = (ContinuousClock.now - start) / .seconds(1)
if arguments.mode == "download" { try? FileManager.default.removeItem(atPath: arguments.file + ".download") }
let moved = last?.completed ?? 0
guard response.status.kind == .successful, moved == arguments.bytes else {
    FileHandle.standardError.write(Data("HTTP \(response.status.code), \(moved) of \(arguments.bytes) bytes\n".utf8))
    exit(1)
}
print(
    "\(arguments.mode) bytes=\(arguments.bytes) seconds=\(String(format: "%.3f", seconds)) "
        + "progress_updates=\(updates) rss_before_kib=\(before) peak_rss_kib=\(status("VmHWM"))")

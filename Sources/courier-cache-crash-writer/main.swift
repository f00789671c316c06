// Writes cache entries in a loop until killed; used by the cache crash-safety test.
//
// Usage: courier-cache-crash-writer <cache folder> <round>
// Before each store it prints "begin <round> <index>", after it "stored <round> <index>" (each
// line one unbuffered write), so the test knows which entries were committed before it sent
// SIGKILL at an arbitrary moment, and whether the kill landed inside a store. Stores take
// about 98% of the loop's time (90% inside the SQLite transaction), measured on a debug build.
import Courier
import Foundation
import HTTPTypes

let arguments = CommandLine.arguments
guard arguments.count == 3, let round = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: courier-cache-crash-writer <folder> <round>\n".utf8))
    exit(2)
}

let cache: HostScopedCache
do {
    cache = try HostScopedCache(
        configuration: .init(
            rules: [CacheRule(CrashWriterFixture.host, .forceLifetime(.seconds(86_400)))],
            storage: .disk(directory: arguments[1]), memoryCapacityEntries: 8,
            diskCapacityBytes: CrashWriterFixture.diskCapacityBytes,
            onEvent: { event in
                // A store the disk refused is kept in memory only: the test must not count it.
                guard case .diskUnavailable(let reason) = event else { return }
                FileHandle.standardError.write(Data("disk unavailable: \(reason)\n".utf8))
                exit(3)
            }))
} catch {
    FileHandle.standardError.write(Data("cannot open the cache: \(error)\n".utf8))
    exit(1)
}

let now = Date()
for index in 0..<CrashWriterFixture.maxIndex {
    let request = HTTPRequest(
        method: .get, scheme: "https", authority: CrashWriterFixture.host, path: CrashWriterFixture.path(round, index))
    let body = CrashWriterFixture.body(round, index)
    var fields = HTTPFields()
    fields.append(HTTPField(name: .contentType, value: "application/octet-stream"))
    fields.append(HTTPField(name: HTTPField.Name("X-Round-Index")!, value: "\(round) \(index)"))
    FileHandle.standardOutput.write(Data("begin \(round) \(index)\n".utf8))
    let stored = cache.store(
        CacheRequest(request), response: HTTPResponse(status: .ok, headerFields: fields), body: body,
        receivedWhole: true, requestTime: now, responseTime: now)
    guard stored else {
        FileHandle.standardError.write(Data("store failed at \(index)\n".utf8))
        exit(1)
    }
    FileHandle.standardOutput.write(Data("stored \(round) \(index)\n".utf8))
}

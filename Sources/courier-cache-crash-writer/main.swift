// Writes cache entries in a loop until killed; used by the cache crash-safety test.
//
// Usage: courier-cache-crash-writer <cache folder> <round>
// After each committed store it prints "stored <round> <index>" and flushes, so the test
// knows which entries were committed before it sends SIGKILL at an arbitrary moment.
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
            diskCapacityBytes: CrashWriterFixture.diskCapacityBytes))
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
    let stored = cache.store(
        CacheRequest(request), response: HTTPResponse(status: .ok, headerFields: fields), body: body,
        receivedWhole: true, requestTime: now, responseTime: now)
    guard stored else {
        FileHandle.standardError.write(Data("store failed at \(index)\n".utf8))
        exit(1)
    }
    FileHandle.standardOutput.write(Data("stored \(round) \(index)\n".utf8))
}

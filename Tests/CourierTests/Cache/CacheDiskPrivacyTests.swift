import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The disk tier on a shared machine: its folder `0700`, its files `0600`, and the key of the
/// credential digests in a file of its own (never in the database), kept across restarts and
/// replaced, with the entries it keyed, when it is lost or damaged.
@Suite struct CacheDiskPrivacyTests {
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    static func cache(_ folder: String, events: EventLog? = nil) throws -> HostScopedCache {
        try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .disk(directory: folder),
                onEvent: events?.handler))
    }

    static func client(_ server: TestServer, _ cache: HostScopedCache, credential: String?) throws -> HTTPClient {
        let client = try makeClient {
            $0.baseURL = server.baseURL
            $0.cache = cache
        }
        if let credential { try client.logIn(credential: credential) }
        return client
    }

    static func server() throws -> TestServer {
        let server = try TestServer()
        server.route("/me") { request in
            .text("user " + (request.header("Authorization") ?? "anonymous")).with(.cacheControl, "max-age=600")
        }
        return server
    }

    static let me = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me")

    // MARK: - Permissions

    /// Broken on the old main: the folder and the database were made with the umask's modes
    /// (0755 / 0644 under the usual 022), readable by every user of the machine.
    @Test(arguments: [false, true])
    func folderIs0700AndEveryFileIs0600(folderExistedWide: Bool) async throws {
        let directory = TemporaryDirectory()
        let folder = directory.path + "/http"
        if folderExistedWide {
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            // Files an older version left world-readable.
            for name in ["cache.sqlite3", CacheSecret.fileName] {
                #expect(FileManager.default.createFile(atPath: folder + "/" + name, contents: nil))
                #expect(chmod(folder + "/" + name, 0o644) == 0)
            }
            #expect(Self.mode(folder) == 0o755)
        }
        let server = try Self.server()
        defer { server.stop() }
        let cache = try Self.cache(folder)
        let client = try Self.client(server, cache, credential: "alice")
        _ = try await client.send(Self.me)
        #expect(try await client.send(Self.me).isFromCache)
        #expect(Self.mode(folder) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(files == ["cache.key", "cache.sqlite3", "cache.sqlite3-shm", "cache.sqlite3-wal"])
        for name in files {
            #expect(Self.mode(folder + "/" + name) == 0o600, "\(name)")
        }
    }

    /// A shared sticky folder such as /tmp cannot be made private: refused with a clear error
    /// rather than used (or chmod-ed under everyone else's feet).
    @Test func aSharedStickyFolderIsRefused() async throws {
        let directory = TemporaryDirectory()
        let shared = directory.path + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        #expect(chmod(shared, 0o1777) == 0)
        let error = #expect(throws: CourierError.self) { try Self.cache(shared) }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("sticky") == true)
        #expect(Self.mode(shared) == 0o1777)
        // A subfolder of it is fine, and private.
        let server = try Self.server()
        defer { server.stop() }
        let client = try Self.client(server, try Self.cache(shared + "/mine"), credential: "alice")
        _ = try await client.send(Self.me)
        #expect(try await client.send(Self.me, options: Self.cacheOnly).isFromCache)
        #expect(Self.mode(shared + "/mine") == 0o700)
    }

    // MARK: - The key file

    /// The key is a 32-byte 0600 file beside the database, and not inside it; a restart reads it
    /// back, so a credentialed entry is still served after it.
    @Test func theKeyLivesBesideTheDatabaseAndSurvivesARestart() async throws {
        let directory = TemporaryDirectory()
        let folder = directory.path + "/http"
        let server = try Self.server()
        defer { server.stop() }
        do {
            let client = try Self.client(server, try Self.cache(folder), credential: "alice")
            _ = try await client.send(Self.me)
        }
        let key = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + CacheSecret.fileName))
        #expect(key.count == 32)
        var database = Data()
        for suffix in ["", "-wal"] {
            database.append((try? Data(contentsOf: URL(fileURLWithPath: folder + "/cache.sqlite3" + suffix))) ?? Data())
        }
        #expect(!database.isEmpty)
        #expect(database.range(of: key) == nil)
        let restarted = try Self.client(server, try Self.cache(folder), credential: "alice")
        let served = try await restarted.send(Self.me, options: Self.cacheOnly)
        #expect(served.isFromCache)
        #expect(String(decoding: served.body, as: UTF8.self) == "user Bearer alice")
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + CacheSecret.fileName)) == key)
    }

    static var cacheOnly: CallOptions {
        var options = CallOptions()
        options.cachePolicy = .returnCacheDataDontLoad
        return options
    }

    enum KeyDamage: String, CaseIterable, Sendable {
        case deleted, truncated, replacedByAFolder
    }

    /// A lost or damaged key file: a new key is made, and the credentialed entries keyed with
    /// the old one — which no identity can match or purge any more — are dropped; anonymous
    /// entries stay.
    @Test(arguments: KeyDamage.allCases)
    func aLostOrDamagedKeyDropsTheCredentialedEntries(damage: KeyDamage) async throws {
        let directory = TemporaryDirectory()
        let folder = directory.path + "/http"
        let keyPath = folder + "/" + CacheSecret.fileName
        let server = try Self.server()
        defer { server.stop() }
        do {
            let cache = try Self.cache(folder)
            _ = try await Self.client(server, cache, credential: "alice").send(Self.me)
            _ = try await Self.client(server, cache, credential: nil).send(Self.me)
        }
        let oldKey = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        try FileManager.default.removeItem(atPath: keyPath)
        switch damage {
        case .deleted: break
        case .truncated: #expect(FileManager.default.createFile(atPath: keyPath, contents: oldKey.prefix(5)))
        case .replacedByAFolder:
            try FileManager.default.createDirectory(atPath: keyPath, withIntermediateDirectories: false)
        }
        let events = EventLog()
        let reopened: HostScopedCache
        do {
            reopened = try Self.cache(folder, events: events)
        } catch let error as CourierError where damage == .replacedByAFolder {
            // A folder in the key's place cannot be replaced by a file: a clear error, no crash.
            #expect(error.code == .configuration)
            return
        }
        #expect(events.all.contains(.purged(count: 1)))
        let alice = try Self.client(server, reopened, credential: "alice")
        let anonymous = try Self.client(server, reopened, credential: nil)
        await #expect(throws: CourierError.self) { try await alice.send(Self.me, options: Self.cacheOnly) }
        #expect(try await anonymous.send(Self.me, options: Self.cacheOnly).isFromCache)
        let newKey = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        #expect(newKey.count == 32)
        #expect(newKey != oldKey)
        #expect(Self.mode(keyPath) == 0o600)
        // The new key works across the next restart.
        _ = try await alice.send(Self.me)
        let again = try Self.client(server, try Self.cache(folder), credential: "alice")
        #expect(try await again.send(Self.me, options: Self.cacheOnly).isFromCache)
    }
}

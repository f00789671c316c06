import CSQLite
import Foundation
import HTTPTypes

/// The persistent tier: one SQLite database, one row per stored variant.
///
/// Crash safety: the database runs in WAL mode and every store is one transaction holding the
/// head, the body and the checksum together, so a process killed at any instant leaves either
/// the old row or the new one, never a half-written one (SQLite rolls back an uncommitted WAL
/// tail on the next open). `synchronous=NORMAL` is enough for that: in WAL mode it only
/// gives up durability of the last commits on an OS crash or power loss, never consistency,
/// and losing a few recent cache entries is harmless. On top of this every row carries an
/// xxHash64 of its contents, checked on read, so a row damaged any other way is dropped
/// rather than served.
final class DiskCacheTier {
    let path: String
    let maxBytes: Int
    private var connection: SQLiteConnection
    private(set) var totalBytes = 0
    /// Why the database was found damaged and recreated empty when it was opened, if it was.
    private(set) var recreatedBecause: String?
    private var accessCounter: Int64 = 0
    /// Rows read from memory since the last write, whose recency is written lazily.
    private var pendingTouches: [String: Int64] = [:]
    /// `PRAGMA data_version` when `totalBytes` and `accessCounter` were last read from the
    /// table: it changes when another connection (a second cache on the folder, another
    /// process) commits, whose rows these counters do not know.
    private var dataVersion: Int64 = 0

    /// A row read back from disk.
    struct Row {
        var id: Int64
        var entry: CacheEntry
    }

    /// Opens or creates the database in `directory`, recreating it if it is damaged.
    /// - Parameters:
    ///   - busyWait: How long to keep retrying an open that another connection's lock refuses.
    ///   - onBusy: Called before each such retry (tests use it to release the other lock).
    init(
        directory: String, maxBytes: Int, busyWait: Duration = SQLiteConnection.busyTimeout,
        onBusy: (() -> Void)? = nil
    ) throws(CourierError) {
        try CacheFolder.secure(directory)
        path = (directory as NSString).appendingPathComponent("cache.sqlite3")
        self.maxBytes = maxBytes
        let opened: Opened
        do {
            opened = try Self.open(path, busyWait: busyWait, onBusy: onBusy)
        } catch  where SQLiteConnection.isCorruption(error) {
            Self.deleteFiles(path)
            opened = try Self.open(path, busyWait: busyWait, onBusy: onBusy)
            recreatedBecause = error.message
        }
        connection = opened.connection
        totalBytes = opened.totalBytes
        accessCounter = opened.accessCounter
        if opened.replacedForeignTable {
            recreatedBecause = "its entries table had another schema (another version's or another tool's)"
        }
    }

    private struct Opened {
        var connection: SQLiteConnection
        var totalBytes: Int
        var accessCounter: Int64
        /// Whether an `entries` table of another shape was replaced by an empty one.
        var replacedForeignTable = false
    }

    /// The columns of `entries`, in this version's schema.
    private static let columns: Set<String> = [
        "id", "key", "variant", "url", "identity", "head", "body", "request_time", "response_time", "lifetime",
        "has_query", "checksum", "size", "last_access",
    ]

    /// Opens the database, waiting while another connection's lock refuses it.
    ///
    /// A statement that needs a lock normally waits in SQLite's busy handler, but SQLite answers
    /// SQLITE_BUSY at once, without the handler, when a connection must upgrade a read lock it
    /// already holds — which switching a database to WAL does. So when several clients or
    /// processes open one folder for the first time together, one of them can be refused (seen:
    /// about 1 open in 500 with 8 at once). Every step of opening is idempotent, so the whole
    /// sequence is retried with a short back-off for as long as a busy statement would wait.
    private static func open(
        _ path: String, busyWait: Duration = SQLiteConnection.busyTimeout, onBusy: (() -> Void)? = nil
    ) throws(CourierError)
        -> Opened
    {
        let deadline = ContinuousClock.now + busyWait
        var pause = Duration.milliseconds(1)
        while true {
            do {
                return try openOnce(path)
            } catch  where SQLiteConnection.isBusy(error) {
                guard ContinuousClock.now + pause < deadline else {
                    var refused = CourierError(
                        .configuration,
                        "cache storage: \(path) stayed locked by another connection for \(busyWait); "
                            + "is another process holding a transaction open on it?")
                    refused.underlying = error.underlying
                    throw refused
                }
                onBusy?()
                let (seconds, attoseconds) = pause.components
                usleep(useconds_t(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
                pause = min(pause * 2, .milliseconds(50))
            }
        }
    }

    private static func openOnce(_ path: String) throws(CourierError) -> Opened {
        try CacheFolder.createPrivateFile(path)
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=NORMAL")
        // Truncate the WAL back to 4 MiB after checkpoints so it does not keep its high-water size.
        try connection.execute("PRAGMA journal_size_limit=4194304")
        let replacedForeignTable = try replaceForeignTable(connection)
        try createSchema(connection)
        // Two queries, each answered from an index: one over both columns scans the table, and
        // reading `size` (stored after the body) walks every body's overflow pages, so opening a
        // full 200 MB cache read all 200 MB (630 ms warm, from disk far longer; 0.2 ms now).
        let total = try connection.statement("SELECT COALESCE(SUM(size), 0) FROM entries")
        let totalBytes = try total.step(connection) ? Int(total.int64(0)) : 0
        sqlite3_reset(total.raw)
        let newest = try connection.statement("SELECT COALESCE(MAX(last_access), 0) FROM entries")
        let accessCounter = try newest.step(connection) ? newest.int64(0) : 0
        sqlite3_reset(newest.raw)
        // The -wal and -shm files exist now; ones an older version left may be wider than 0600.
        try CacheFolder.tighten([path, path + "-wal", path + "-shm"])
        return Opened(
            connection: connection, totalBytes: totalBytes, accessCounter: accessCounter,
            replacedForeignTable: replacedForeignTable)
    }

    /// Replaces an `entries` table whose columns are not this version's (another version's or
    /// another tool's) by an empty one of this version's: with it, every index or write of this
    /// version fails, and the cache is disposable.
    /// - Returns: Whether a table was replaced.
    private static func replaceForeignTable(_ connection: SQLiteConnection) throws(CourierError) -> Bool {
        guard try hasForeignTable(connection) else { return false }
        // Under the write lock, and checked again there: two connections opening the folder
        // together must neither both drop it nor drop the one the other has just made.
        try connection.execute("BEGIN IMMEDIATE")
        do {
            let foreign = try hasForeignTable(connection)
            if foreign {
                try connection.execute("DROP TABLE entries")
                try createSchema(connection)
            }
            try connection.execute("COMMIT")
            return foreign
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    private static func hasForeignTable(_ connection: SQLiteConnection) throws(CourierError) -> Bool {
        let info = try connection.statement("SELECT name FROM pragma_table_info('entries')")
        var names: Set<String> = []
        while try info.step(connection) { names.insert(info.text(0)) }
        sqlite3_reset(info.raw)
        return !names.isEmpty && names != columns
    }

    private static func createSchema(_ connection: SQLiteConnection) throws(CourierError) {
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS entries(
              id INTEGER PRIMARY KEY,
              key TEXT NOT NULL, variant TEXT NOT NULL, url TEXT NOT NULL, identity TEXT NOT NULL,
              head BLOB NOT NULL, body BLOB NOT NULL,
              request_time REAL NOT NULL, response_time REAL NOT NULL, lifetime REAL, has_query INTEGER NOT NULL,
              checksum INTEGER NOT NULL, size INTEGER NOT NULL, last_access INTEGER NOT NULL,
              UNIQUE(key, variant));
            CREATE INDEX IF NOT EXISTS entries_url ON entries(url);
            CREATE INDEX IF NOT EXISTS entries_identity ON entries(identity);
            CREATE INDEX IF NOT EXISTS entries_access ON entries(last_access);
            CREATE INDEX IF NOT EXISTS entries_size ON entries(size);
            """)
    }

    private static func deleteFiles(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// Every valid variant stored under `key`; damaged rows are deleted and reported.
    func variants(for key: String) throws(CourierError) -> (rows: [Row], corrupt: Int) {
        let select = try connection.statement(
            "SELECT id, variant, url, identity, head, body, request_time, response_time, lifetime, has_query, checksum"
                + " FROM entries WHERE key = ?1")
        select.bind(1, key)
        var rows: [Row] = []
        var corrupt: [Int64] = []
        while try select.step(connection) {
            let id = select.int64(0)
            let stored = StoredRow(
                key: key, variant: select.text(1), url: select.text(2), identity: select.text(3),
                head: select.data(4), body: select.data(5), requestTime: select.double(6) ?? 0,
                responseTime: select.double(7) ?? 0, lifetime: select.double(8), hasQuery: select.int64(9) != 0,
                checksum: UInt64(bitPattern: select.int64(10)))
            guard let entry = stored.decode() else {
                corrupt.append(id)
                continue
            }
            rows.append(Row(id: id, entry: entry))
        }
        sqlite3_reset(select.raw)
        for id in corrupt { try delete(id: id) }
        if !rows.isEmpty { touch(key) }
        return (rows, corrupt.count)
    }

    /// Notes that `key` was used; written with the next store.
    func touch(_ key: String) {
        accessCounter += 1
        pendingTouches[key] = accessCounter
    }

    /// Writes `entry` in one transaction, replacing the same variant and any variant of the key
    /// selected by a different `Vary` (the server changed it), then evicts least recently used
    /// rows over the byte bound. An entry larger than the bound is not written (the rows it
    /// replaces are deleted): it would evict every other row, then itself.
    /// - Returns: The keys evicted, and how many other variants of the key remain.
    func store(_ entry: CacheEntry) throws(CourierError) -> (evicted: [String], otherVariants: Int) {
        let head = CacheHeadCodec.encode(entry.response)
        let requestTime = entry.requestTime.timeIntervalSince1970
        let responseTime = entry.responseTime.timeIntervalSince1970
        let checksum = Self.checksum(
            key: entry.key, variant: entry.variant, head: head, body: entry.body, requestTime: requestTime,
            responseTime: responseTime, lifetime: entry.forcedLifetime)
        let size = head.count + entry.body.count + entry.key.utf8.count + entry.variant.utf8.count + 64
        return try transaction { () throws(CourierError) -> ([String], Int) in
            try catchUpWithOtherConnections()
            try flushTouches()
            let otherVariants = try removeReplacedVariants(of: entry)
            guard size <= maxBytes else { return ([], otherVariants) }
            accessCounter += 1
            let insert = try connection.statement(
                "INSERT INTO entries(key, variant, url, identity, head, body, request_time, response_time, lifetime,"
                    + " has_query, checksum, size, last_access) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)")
            insert.bind(1, entry.key)
            insert.bind(2, entry.variant)
            insert.bind(3, entry.url)
            insert.bind(4, entry.identity)
            insert.bind(5, head)
            insert.bind(6, entry.body)
            insert.bind(7, requestTime)
            insert.bind(8, responseTime)
            insert.bind(9, entry.forcedLifetime)
            insert.bind(10, Int64(entry.hasQuery ? 1 : 0))
            insert.bind(11, Int64(bitPattern: checksum))
            insert.bind(12, Int64(size))
            insert.bind(13, accessCounter)
            try insert.run(connection)
            totalBytes += size
            return (try evictOverBound(), otherVariants)
        }
    }

    /// Deletes the rows `entry` replaces. - Returns: How many variants of its key remain.
    private func removeReplacedVariants(of entry: CacheEntry) throws(CourierError) -> Int {
        let select = try connection.statement("SELECT id, size, variant FROM entries WHERE key = ?1")
        select.bind(1, entry.key)
        var doomed: [(Int64, Int)] = []
        var kept = 0
        let names = CacheVariant.names(of: entry.variant)
        while try select.step(connection) {
            let variant = select.text(2)
            if variant == entry.variant || CacheVariant.names(of: variant) != names {
                doomed.append((select.int64(0), Int(select.int64(1))))
            } else {
                kept += 1
            }
        }
        sqlite3_reset(select.raw)
        for (id, size) in doomed {
            try deleteRow(id: id)
            totalBytes -= size
        }
        return kept
    }

    private func evictOverBound() throws(CourierError) -> [String] {
        var evicted: [String] = []
        while totalBytes > maxBytes {
            let oldest = try connection.statement("SELECT id, size, key FROM entries ORDER BY last_access LIMIT 32")
            var batch: [(Int64, Int, String)] = []
            while try oldest.step(connection) { batch.append((oldest.int64(0), Int(oldest.int64(1)), oldest.text(2))) }
            sqlite3_reset(oldest.raw)
            guard !batch.isEmpty else {
                totalBytes = 0
                break
            }
            for (id, size, key) in batch where totalBytes > maxBytes {
                try deleteRow(id: id)
                totalBytes -= size
                evicted.append(key)
            }
        }
        return evicted
    }

    /// Reads the byte total and the recency counter from the table again when another
    /// connection wrote since this one last did: each connection counted only its own rows, so
    /// a folder shared by several caches grew to the bound times their number, and their rows'
    /// recency numbers overlapped. Inside a write transaction, so nothing changes meanwhile.
    private func catchUpWithOtherConnections() throws(CourierError) {
        let version = try connection.statement("PRAGMA data_version")
        let current = try version.step(connection) ? version.int64(0) : dataVersion
        sqlite3_reset(version.raw)
        guard current != dataVersion else { return }
        dataVersion = current
        recomputeTotal()
        let newest = try connection.statement("SELECT COALESCE(MAX(last_access), 0) FROM entries")
        if try newest.step(connection) { accessCounter = max(accessCounter, newest.int64(0)) }
        sqlite3_reset(newest.raw)
    }

    private func flushTouches() throws(CourierError) {
        guard !pendingTouches.isEmpty else { return }
        let update = try connection.statement("UPDATE entries SET last_access = ?1 WHERE key = ?2")
        for (key, access) in pendingTouches {
            sqlite3_reset(update.raw)
            update.bind(1, access)
            update.bind(2, key)
            try update.run(connection)
        }
        pendingTouches = [:]
    }

    /// Deletes one row (outside or inside a transaction).
    func delete(id: Int64) throws(CourierError) {
        let size = try connection.statement("SELECT size FROM entries WHERE id = ?1")
        size.bind(1, id)
        if try size.step(connection) { totalBytes -= Int(size.int64(0)) }
        sqlite3_reset(size.raw)
        try deleteRow(id: id)
    }

    private func deleteRow(id: Int64) throws(CourierError) {
        let delete = try connection.statement("DELETE FROM entries WHERE id = ?1")
        delete.bind(1, id)
        try delete.run(connection)
    }

    /// Deletes the rows where `column` equals `value` (`url` or `identity`).
    /// - Returns: The primary keys removed.
    func deleteAll(where column: String, equals value: String) throws(CourierError) -> [String] {
        precondition(column == "url" || column == "identity" || column == "key")
        return try transaction { () throws(CourierError) -> [String] in
            let select = try connection.statement("SELECT key, size FROM entries WHERE \(column) = ?1")
            select.bind(1, value)
            var keys: [String] = []
            var bytes = 0
            while try select.step(connection) {
                keys.append(select.text(0))
                bytes += Int(select.int64(1))
            }
            sqlite3_reset(select.raw)
            let delete = try connection.statement("DELETE FROM entries WHERE \(column) = ?1")
            delete.bind(1, value)
            try delete.run(connection)
            totalBytes -= bytes
            return keys
        }
    }

    /// Deletes the rows owned by any of `identities` (see `StoredIdentity.owns`).
    /// - Returns: The primary keys removed.
    func deleteAll(ownedBy identities: [StoredIdentity]) throws(CourierError) -> [String] {
        try transaction { () throws(CourierError) -> [String] in
            // Purges are rare: scan the identified rows and match their digests here.
            let select = try connection.statement("SELECT id, key, identity, size FROM entries WHERE identity <> ''")
            var doomed: [(Int64, String, Int)] = []
            while try select.step(connection) {
                let stored = Substring(select.text(2))
                if identities.contains(where: { $0.owns(stored) }) {
                    doomed.append((select.int64(0), select.text(1), Int(select.int64(3))))
                }
            }
            sqlite3_reset(select.raw)
            for (id, _, size) in doomed {
                try deleteRow(id: id)
                totalBytes -= size
            }
            return doomed.map(\.1)
        }
    }

    /// Replaces a damaged database with an empty one.
    func reset() throws(CourierError) {
        connection.close()
        Self.deleteFiles(path)
        connection = try Self.open(path).connection
        totalBytes = 0
        pendingTouches = [:]
    }

    /// Deletes every row that belongs to an identity.
    /// - Returns: How many rows were deleted.
    func deleteAllIdentified() throws(CourierError) -> Int {
        try connection.execute("DELETE FROM entries WHERE identity <> ''")
        let deleted = connection.changes
        recomputeTotal()
        return deleted
    }

    /// Deletes everything.
    func deleteEverything() throws(CourierError) {
        try connection.execute("DELETE FROM entries")
        totalBytes = 0
        pendingTouches = [:]
    }

    /// Writes pending recency updates.
    func flush() throws(CourierError) {
        try transaction { () throws(CourierError) in try flushTouches() }
    }

    /// Runs SQL directly (tests use it to damage rows).
    func executeForTesting(_ sql: String) throws(CourierError) { try connection.execute(sql) }

    /// `PRAGMA integrity_check` (tests).
    func integrityCheck() throws(CourierError) -> String {
        let check = try connection.statement("PRAGMA integrity_check")
        let result = try check.step(connection) ? check.text(0) : "no result"
        sqlite3_reset(check.raw)
        return result
    }

    /// `PRAGMA page_count` (tests).
    func pageCount() throws(CourierError) -> Int {
        let count = try connection.statement("PRAGMA page_count")
        let result = try count.step(connection) ? Int(count.int64(0)) : 0
        sqlite3_reset(count.raw)
        return result
    }

    /// The number of rows (tests).
    func rowCount() throws(CourierError) -> Int {
        let count = try connection.statement("SELECT COUNT(*) FROM entries")
        let result = try count.step(connection) ? Int(count.int64(0)) : 0
        sqlite3_reset(count.raw)
        return result
    }

    private func transaction<T>(_ body: () throws(CourierError) -> T) throws(CourierError) -> T {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try connection.execute("COMMIT")
            return result
        } catch {
            try? connection.execute("ROLLBACK")
            pendingTouches = [:]
            recomputeTotal()
            throw error
        }
    }

    private func recomputeTotal() {
        guard let sum = try? connection.statement("SELECT COALESCE(SUM(size), 0) FROM entries") else { return }
        if (try? sum.step(connection)) == true { totalBytes = Int(sum.int64(0)) }
        sqlite3_reset(sum.raw)
    }

    static func checksum(
        key: String, variant: String, head: Data, body: Data, requestTime: Double, responseTime: Double,
        lifetime: Double?
    ) -> UInt64 {
        var meta = Data(key.utf8)
        meta.append(0)
        meta.append(contentsOf: variant.utf8)
        meta.append(0)
        meta.append(head)
        meta.append(
            contentsOf: "\(requestTime.bitPattern) \(responseTime.bitPattern) \(lifetime?.bitPattern ?? 0)".utf8)
        return CacheChecksum.xxh64(body, seed: CacheChecksum.xxh64(meta))
    }
}

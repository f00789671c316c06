import CSQLite
import Foundation

/// A thin owner of one `sqlite3` connection and its prepared statements.
///
/// Not thread-safe by itself: `DiskCacheTier` is only used inside a `LockedValue`.
final class SQLiteConnection {
    private(set) var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    /// How long a statement waits for another connection's lock before SQLITE_BUSY.
    static let busyTimeout = Duration.seconds(5)

    /// Opens (creating) the database at `path`.
    init(path: String) throws(CourierError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw SQLiteConnection.error(rc, "cannot open the cache database: \(message)")
        }
        handle = db
        sqlite3_busy_timeout(db, Int32(Self.busyTimeout.components.seconds * 1_000))
        sqlite3_extended_result_codes(db, 1)
    }

    deinit { close() }

    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs SQL without results (pragmas, schema, transactions).
    func execute(_ sql: String) throws(CourierError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard rc == SQLITE_OK else {
            throw Self.error(rc, "\(message.map { String(cString: $0) } ?? "error") in \(sql.prefix(60))")
        }
    }

    /// The cached prepared statement for `sql`, reset and with bindings cleared.
    func statement(_ sql: String) throws(CourierError) -> Statement {
        if let existing = statements[sql] {
            sqlite3_reset(existing)
            sqlite3_clear_bindings(existing)
            return Statement(raw: existing)
        }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw Self.error(rc, "cannot prepare \(sql.prefix(60)): \(lastMessage)") }
        statements[sql] = raw
        return Statement(raw: raw)
    }

    var lastMessage: String { handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed" }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    static func error(_ rc: Int32, _ message: String) -> CourierError {
        var error = CourierError(.configuration, "cache storage: \(message) (sqlite \(rc))")
        error.underlying = SQLiteError(code: rc)
        return error
    }

    /// Whether a failure means another connection's lock refused the statement.
    static func isBusy(_ error: CourierError) -> Bool {
        guard let code = (error.underlying as? SQLiteError)?.code else { return false }
        return code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED
    }

    /// Whether a failure means the database file is damaged and should be recreated.
    static func isCorruption(_ error: any Error) -> Bool {
        guard let code = ((error as? CourierError)?.underlying as? SQLiteError)?.code else { return false }
        let primary = code & 0xff
        return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB
    }
}

/// The SQLite result code behind a storage failure.
struct SQLiteError: Error, Sendable, Hashable {
    let code: Int32
}

/// A prepared statement borrowed from `SQLiteConnection` for one execution.
struct Statement {
    let raw: OpaquePointer
    // SQLITE_TRANSIENT: SQLite copies the bytes before bind returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ index: Int32, _ text: String) {
        sqlite3_bind_text(raw, index, text, -1, Self.transient)
    }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(raw, index, value) }

    func bind(_ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(raw, index, value) } else { sqlite3_bind_null(raw, index) }
    }

    func bind(_ index: Int32, _ data: Data) {
        _ = data.withUnsafeBytes { buffer in
            // An empty buffer may have a nil base address, which SQLite would store as NULL.
            if buffer.isEmpty {
                sqlite3_bind_zeroblob(raw, index, 0)
            } else {
                sqlite3_bind_blob(raw, index, buffer.baseAddress, Int32(buffer.count), Self.transient)
            }
        }
    }

    /// Steps once. - Returns: true when a row is available.
    func step(_ connection: SQLiteConnection) throws(CourierError) -> Bool {
        let rc = sqlite3_step(raw)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw SQLiteConnection.error(rc, connection.lastMessage)
    }

    /// Steps to completion, discarding rows.
    func run(_ connection: SQLiteConnection) throws(CourierError) {
        while try step(connection) {}
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }

    func double(_ column: Int32) -> Double? {
        sqlite3_column_type(raw, column) == SQLITE_NULL ? nil : sqlite3_column_double(raw, column)
    }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(raw, column) else { return "" }
        return String(cString: pointer)
    }

    func data(_ column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let pointer = sqlite3_column_blob(raw, column) else { return Data() }
        return Data(bytes: pointer, count: count)
    }
}

// The only file that calls SQLite. Bound values never appear in errors or logs.

internal import CSQLite
import FoundationEssentials
import Glibc

/// One SQLite connection, used from one thread at a time (the daemon's main loop).
///
/// Package-visible only so that the fuzz targets can build rows (``Value``); its methods
/// stay internal to the store.
package final class Database {
    let handle: OpaquePointer
    /// The file it opened.
    let path: String
    /// What folds the write-ahead log into the file, when not the commits themselves
    /// (SQLite+Checkpoints.swift).
    var checkpointer: BackgroundCheckpointer?

    /// Opens (creating if needed) the database at `path`; with `readOnly`, only opens it, and
    /// nothing is ever written to it (a backup being verified).
    init(path: String, readOnly: Bool = false) throws(StoreError) {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw .database(code: status, message: message)
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5_000)  // as ``failsWhenBusy`` restores it
        // Temporary data (the statement journal of every savepoint, sorts, temporary tables)
        // in memory, never in a file under /var/tmp: a nested transaction (one a store inside
        // a batch's) journaled each page it touched to that file, a write(2) of 4 KiB a page,
        // 17% of secretd's writer in a 100,000-item import. And page images never reach a disk.
        sqlite3_exec(db, "PRAGMA temp_store = MEMORY", nil, nil, nil)
    }

    deinit { close() }

    /// How long a statement waits for another connection's write lock before it fails
    /// (5 s from the start).
    func busyTimeout(milliseconds: Int32) {
        guard !isClosed else { return }
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Whether ``close()`` ran; every call after it throws.
    private(set) var isClosed = false

    /// Closes the connection. Being the file's only connection, it folds the write-ahead log
    /// into the database file and removes the `-wal` and `-shm` files. Closing twice does nothing.
    func close() {
        guard !isClosed else { return }
        stopBackgroundCheckpoints()  // so that this connection is the last, and folds the log in
        statements.removeAll()  // finalized before the connection closes
        sqlite3_close_v2(handle)
        isClosed = true
    }

    /// Closes the connection without folding a write-ahead log into the file (SQLite's
    /// checkpoint on close): for a file refused at start, which must stay as it was.
    func closeLeavingFile() {
        guard !isClosed else { return }
        keychain_sqlite_no_checkpoint_on_close(handle)
        close()
    }

    /// The error every call makes once the connection is closed.
    private static let closedError = StoreError.io("the database is closed")

    /// Runs one or more statements that take no parameters.
    func execute(_ sql: String) throws(StoreError) {
        guard !isClosed else { throw Self.closedError }
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw error(status) }
    }

    /// Statements prepared so far, by SQL text: parsing costs more than running most of ours.
    private var statements: [String: Statement] = [:]
    /// How many prepared statements are kept (search builds a few shapes per attribute count).
    private static let statementCacheLimit = 128

    /// The texts of the INSERTs and UPDATEs built from column lists (Database+Columns.swift),
    /// with what they were built from: a handful, so a list is searched faster than a
    /// dictionary is hashed.
    var builtStatements: [(shape: StatementShape, sql: String)] = []

    /// `sql`, prepared once and kept, with its parameters bound in order. Used by one caller
    /// at a time: ``run(_:_:)`` and ``rows(_:_:)`` finish with it before they return. When
    /// commits are grouped, the first statement after a commit opens the group's transaction
    /// (``groupsCommits``); the statements that open and close transactions themselves don't.
    private func prepare(_ sql: String, _ values: [Value], opensGroup: Bool = true) throws(StoreError) -> Statement {
        guard !isClosed else { throw Self.closedError }
        if opensGroup && awaitsGroup { try control("BEGIN") }
        let prepared: Statement
        if let cached = statements[sql] {
            prepared = cached
        } else {
            var statement: OpaquePointer?
            let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
            guard status == SQLITE_OK, let statement else { throw error(status) }
            prepared = Statement(statement, database: self)
            if statements.count >= Self.statementCacheLimit { statements.removeAll() }
            statements[sql] = prepared
        }
        for (index, value) in values.enumerated() { try prepared.bind(value, at: Int32(index + 1)) }
        if opensGroup && otherWriters && transactionDepth == 0 && hasOpenGroup && !hasPendingCommit && !prepared.isReadOnly {
            // The group's first write, on a snapshot another connection may have written past:
            // a fresh one, with the write lock (``otherWriters``).
            try renewSnapshotForWrite()
        }
        return prepared
    }

    /// Whether another connection of this process may write the file (``ApartWriter``): then
    /// a group that has only read lets go of its snapshot before it writes, and takes a fresh
    /// one with the write lock (`BEGIN IMMEDIATE`), rather than turn a snapshot that may be
    /// stale into a write transaction (which SQLite refuses: `SQLITE_BUSY_SNAPSHOT`).
    var otherWriters = false

    /// Ends the group's transaction when it has only read (nothing to commit), so the next
    /// statement begins on a fresh snapshot.
    func endReadSnapshot() {
        guard hasOpenGroup, !hasPendingCommit, transactionDepth == 0 else { return }
        try? control("COMMIT")
    }

    /// Rolls back the open transaction, if any (what closing the connection would do).
    func endTransaction() {
        guard !isClosed, sqlite3_get_autocommit(handle) == 0 else { return }
        try? execute("ROLLBACK")
    }

    /// Ends the group's read snapshot and opens its write transaction on a fresh one.
    private func renewSnapshotForWrite() throws(StoreError) {
        try control("COMMIT")
        try beginImmediate()
    }

    /// Whether a write that finds another connection holding the write lock fails at once
    /// with ``StoreError/busy`` rather than wait for it (up to 5 s). It can only find it so
    /// when it takes the lock: at `BEGIN IMMEDIATE`, its group's first write.
    var failsWhenBusy = false {
        didSet { busyTimeout(milliseconds: failsWhenBusy ? 0 : 5_000) }
    }

    /// How many writes failed with ``StoreError/busy`` (``failsWhenBusy``); it only grows.
    private(set) var busyFailures = 0

    /// Opens a write transaction, taking the write lock (``failsWhenBusy``).
    private func beginImmediate() throws(StoreError) {
        do {
            try control("BEGIN IMMEDIATE")
        } catch {
            if failsWhenBusy, case .database(let code, _) = error, code == SQLITE_BUSY {
                busyFailures += 1
                throw .busy
            }
            throw error
        }
    }

    /// Runs a statement that opens, ends or marks a transaction (never opens the group's).
    private func control(_ sql: String) throws(StoreError) {
        let statement = try prepare(sql, [], opensGroup: false)
        defer { statement.reset() }
        while try statement.step() {}
    }

    /// Runs a statement that returns no rows.
    func run(_ sql: String, _ values: [Value] = []) throws(StoreError) {
        let statement = try prepare(sql, values)
        defer { statement.reset() }
        while try statement.step() {}
    }

    /// Every row of a query, each as its column values.
    func rows(_ sql: String, _ values: [Value] = []) throws(StoreError) -> [[Value]] {
        let statement = try prepare(sql, values)
        defer { statement.reset() }
        var result: [[Value]] = []
        while try statement.step() { result.append(statement.row()) }
        return result
    }

    /// Runs `body` with a query prepared and its parameters bound; `body` steps through the
    /// rows and reads what it needs of each while it is current (Row.swift), so no row is
    /// copied into values first. The statement is reset when `body` returns.
    func withQuery<Result>(
        _ sql: String, _ values: [Value], _ body: (Statement) throws(StoreError) -> Result
    ) throws(StoreError) -> Result {
        let statement = try prepare(sql, values)
        defer { statement.reset() }
        return try body(statement)
    }

    /// Whether work is grouped, for the daemon's main loop: the first statement after a commit
    /// opens one transaction (a read snapshot, which a write turns into a write transaction),
    /// every later statement and ``transaction(_:)`` (a savepoint of it once it holds writes)
    /// runs inside it, and ``commitPending()`` ends it. So reads share one snapshot until the
    /// daemon ends the group (no WAL locks and no `BEGIN` per statement or per call), and writes
    /// that arrive together share one sync to disk. secretd is the file's only writing process
    /// (``DataDirectoryLock``); while this is its only writing connection the snapshot is never
    /// stale and becomes the write transaction, and once another one writes too
    /// (``otherWriters``) the first write of a group takes a fresh one.
    var groupsCommits = false
    /// Whether the group's transaction holds writes not yet committed (a write of any kind:
    /// a ``transaction(_:)`` or a single statement).
    var hasPendingCommit: Bool { groupsCommits && !isClosed && sqlite3_txn_state(handle, nil) == SQLITE_TXN_WRITE }
    /// Whether the group's transaction is open, with writes or only reads.
    var hasOpenGroup: Bool { groupsCommits && !isClosed && sqlite3_get_autocommit(handle) == 0 }
    /// How many calls of ``transaction(_:)`` are running (nested ones are savepoints).
    private(set) var transactionDepth = 0
    /// Whether commits are grouped and no transaction is open: the next statement opens the group's.
    private var awaitsGroup: Bool { groupsCommits && transactionDepth == 0 && sqlite3_get_autocommit(handle) != 0 }

    /// Rows inserted, updated or deleted through this connection since it opened (rolled back
    /// ones included): it only grows, so it changes whenever the data may have.
    var totalChanges: Int64 { isClosed ? -1 : sqlite3_total_changes64(handle) }

    /// Ends the group's transaction: commits its writes (rolled back, and thrown, when that
    /// fails), or lets go of its read snapshot.
    func commitPending() throws(StoreError) {
        guard hasOpenGroup, transactionDepth == 0 else { return }
        do {
            try control("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` in an IMMEDIATE transaction (or, when commits are grouped, the group's, as
    /// a savepoint of it once the group has written), rolling back what it did when it throws.
    /// The statements that open and close it are prepared once, like any other (parsing them
    /// each time cost 2% of a store). A transaction inside another is a savepoint of it, except
    /// inside a ``wholeTransaction(_:)``.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        if wholeDepth > 0 { return try insideWhole(body) }
        if transactionDepth == 0 && !hasPendingCommit {
            // The outermost, with nothing written before it: a transaction of its own or, when
            // commits are grouped, the group's (it is not open, or has only read), which
            // ``commitPending()`` commits. A failure rolls it all back, which takes back this
            // one's writes alone. No savepoint (two statements a store).
            if !groupsCommits || awaitsGroup {
                try beginImmediate()
            } else if otherWriters {
                try renewSnapshotForWrite()  // the group has only read, perhaps on a stale snapshot
            }
            transactionDepth += 1
            defer { transactionDepth -= 1 }
            do {
                let result = try body()
                if !groupsCommits { try control("COMMIT") }
                return result
            } catch {
                try? execute("ROLLBACK")
                throw error
            }
        }
        // Inside another, or after the group's writes: a savepoint of the open transaction.
        try control("SAVEPOINT write")
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        do {
            let result = try body()
            try control("RELEASE write")
            return result
        } catch {
            try? execute("ROLLBACK TO write")
            try? execute("RELEASE write")
            throw error
        }
    }

    /// As ``transaction(_:)``, for a body whose writes land whole or not at all (a batch of
    /// items, a keyring imported): the transactions inside it are not savepoints of their own,
    /// since any failure inside undoes the whole, even one its body caught (the whole then
    /// throws it). A savepoint journals a copy of every page its writes touch: one per item
    /// of a batch was 4 KiB copied several times an item.
    func wholeTransaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        if wholeDepth > 0 { return try insideWhole(body) }
        return try transaction { () throws(StoreError) -> T in
            wholeDepth += 1
            failureInsideWhole = nil
            defer {
                wholeDepth -= 1
                failureInsideWhole = nil
            }
            let result = try body()
            if let failure = failureInsideWhole { throw failure }
            return result
        }
    }

    /// How many ``wholeTransaction(_:)`` are running: at most one, since one inside another is
    /// part of it.
    private var wholeDepth = 0
    /// The first failure of a transaction inside a ``wholeTransaction(_:)``, which undoes it
    /// even when caught.
    private var failureInsideWhole: StoreError?

    /// Runs `body`, a transaction inside a ``wholeTransaction(_:)``, with no savepoint: its
    /// failure is noted for the whole to undo.
    private func insideWhole<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        do {
            return try body()
        } catch {
            if failureInsideWhole == nil { failureInsideWhole = error }
            throw error
        }
    }

    /// Writes a consistent copy of the whole database into the file at `path`, which must not
    /// exist or be empty (SQLite's `VACUUM INTO`: one read snapshot, free pages left out, the
    /// copy in rollback-journal mode). Not inside a transaction: end the group's first.
    func vacuum(into path: String) throws(StoreError) {
        let statement = try prepare("VACUUM INTO ?", [.text(path)], opensGroup: false)
        defer { statement.reset() }
        while try statement.step() {}
    }

    /// Replaces every page of this database with those of `source` (SQLite's online backup
    /// API, in one write transaction of this connection: a power cut leaves the old or the new
    /// data, never a mix). Not inside a transaction: end the group's first. The two files must
    /// have the same page size (a WAL database cannot change its own).
    func replaceContents(with source: Database) throws(StoreError) {
        guard !isClosed, !source.isClosed else { throw Self.closedError }
        statements.removeAll()  // finalized: prepared against the schema being replaced
        guard let backup = sqlite3_backup_init(handle, "main", source.handle, "main") else {
            throw error(sqlite3_errcode(handle))
        }
        let status = sqlite3_backup_step(backup, -1)
        let finish = sqlite3_backup_finish(backup)
        guard status == SQLITE_DONE else { throw error(status == SQLITE_OK ? finish : status) }
        guard finish == SQLITE_OK else { throw error(finish) }
    }

    /// The rowid of the last inserted row.
    var lastInsertID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// `PRAGMA user_version`, used as the schema version.
    var userVersion: Int {
        get throws(StoreError) {
            let rows = try rows("PRAGMA user_version")
            guard case .integer(let version)? = rows.first?.first else { return 0 }
            return Int(version)
        }
    }

    /// A `StoreError` for a failed call (message from SQLite, never bound values).
    fileprivate func error(_ status: Int32) -> StoreError {
        let code = sqlite3_extended_errcode(handle)
        let message = String(cString: sqlite3_errmsg(handle))
        if status & 0xff == SQLITE_CORRUPT || status & 0xff == SQLITE_NOTADB {
            return .corrupted("database file: \(message)")
        }
        // SQLite says FULL or READONLY itself for most writes; a write or sync the kernel refuses
        // (for want of space, or because it made the file system read-only after an error) is an
        // I/O error whose errno tells.
        let ioError = status & 0xff == SQLITE_IOERR
        let systemError = ioError ? (sqlite3_system_errno(handle) != 0 ? sqlite3_system_errno(handle) : keychain_sqlite_file_errno(handle)) : 0
        if status & 0xff == SQLITE_FULL || ioError && systemError == ENOSPC { return .noSpace(message) }
        if status & 0xff == SQLITE_READONLY || ioError && systemError == EROFS { return .readOnly(message) }
        // The kernel's word for an I/O error goes to the journal with SQLite's.
        if ioError && systemError != 0 { return .database(code: code, message: "\(message) (\(String(cString: strerror(systemError))))") }
        return .database(code: code, message: message)
    }

    /// A column or parameter value.
    /// A column value as SQLite stores it.
    package enum Value: Equatable {
        /// SQL `NULL`.
        case null
        /// An `INTEGER`.
        case integer(Int64)
        /// A `TEXT`.
        case text(String)
        /// A `BLOB`.
        case blob([UInt8])

        /// The integer, or nil.
        var integer: Int64? { if case .integer(let value) = self { return value } else { return nil } }
        /// The text, or nil.
        var text: String? { if case .text(let value) = self { return value } else { return nil } }
        /// The bytes of a blob (or of text), or nil.
        var blob: [UInt8]? {
            switch self {
            case .blob(let value): return value
            case .text(let value): return Array(value.utf8)
            default: return nil
            }
        }
    }

    /// A prepared statement; finalized when released.
    final class Statement {
        private let handle: OpaquePointer
        private unowned let database: Database  // the database keeps its statements

        fileprivate init(_ handle: OpaquePointer, database: Database) {
            self.handle = handle
            self.database = database
        }

        deinit { sqlite3_finalize(handle) }

        /// Makes it ready to run again: rewound, parameters cleared (copies of bound secrets
        /// are freed by SQLite), and no read transaction held open.
        fileprivate func reset() {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }

        fileprivate func bind(_ value: Value, at index: Int32) throws(StoreError) {
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(handle, index)
            case .integer(let number): status = sqlite3_bind_int64(handle, index, number)
            case .text(let text): status = sqlite3_bind_text(handle, index, text, -1, keychain_sqlite_transient())
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob(
                        handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count),
                        keychain_sqlite_transient())
                }
            }
            guard status == SQLITE_OK else { throw database.error(status) }
        }

        /// Whether the statement writes nothing (SQLite's own judgement).
        var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

        /// Advances to the next row; `false` when the statement is done.
        func step() throws(StoreError) -> Bool {
            let status = sqlite3_step(handle)
            switch status {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw database.error(status)
            }
        }

        /// The current row's values.
        func row() -> [Value] {
            (0..<columnCount).map(value(at:))
        }

        /// How many columns each row has.
        var columnCount: Int { Int(sqlite3_column_count(handle)) }

        /// The value in `column` (from 0) of the current row.
        func value(at column: Int) -> Value {
            let column = Int32(column)
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
            case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(handle, column)))
            case SQLITE_BLOB:
                let count = Int(sqlite3_column_bytes(handle, column))
                guard let base = sqlite3_column_blob(handle, column), count > 0 else { return .blob([]) }
                return .blob(Array(UnsafeRawBufferPointer(start: base, count: count)))
            default: return .null
            }
        }
    }
}

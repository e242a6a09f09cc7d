// Restoring the whole store from a backup while secretd runs (`secretctl restore`, secretd's
// Maintenance1): the backup checked as `secretctl backup --verify` checks it, the current data
// kept beside the database as a verified copy, then the backup's pages copied into the live
// connection in one transaction.

public import FoundationEssentials
import Glibc

extension Store {
    /// Replaces the whole database with the backup at the absolute path `path`.
    ///
    /// First the backup is checked, inside one read transaction of its own connection (so
    /// what is checked is what is copied): it opens read-only, passes SQLite's integrity
    /// check, has a schema this secretd reads, and every item of the keyrings `keys` gives keys
    /// for opens. Then the current data is written, verified and synced to `previous` (as
    /// ``backup(to:replacing:keys:)`` writes a backup; never over an existing file). Then
    /// SQLite's online backup API copies the backup's pages into this connection in one write
    /// transaction, and the schema is brought up to date. Refused, nothing changes; a power cut
    /// during the copy leaves the old data or the new.
    ///
    /// - Parameters:
    ///   - keys: the keys held for a collection of the backup (nil: not opened).
    ///   - previous: where the current data is kept (absolute, must not exist).
    /// - Returns: what the check of the backup found.
    public func restore(
        from path: String, keepingCurrentAt previous: String, keys: (CollectionRecord) -> ItemKeys?
    ) throws(StoreError) -> BackupReport {
        guard path.hasPrefix("/") else { throw .invalidInput("the backup's path must be absolute") }
        var backupStatus = stat()
        guard stat(path, &backupStatus) == 0 else {
            throw .invalidInput("cannot read the backup \(path): \(String(cString: strerror(errno)))")
        }
        guard backupStatus.st_mode & S_IFMT == S_IFREG else { throw .invalidInput("the backup \(path) is not a regular file") }
        var liveStatus = stat()
        if stat(databaseURL.path, &liveStatus) == 0, liveStatus.st_dev == backupStatus.st_dev, liveStatus.st_ino == backupStatus.st_ino {
            throw .invalidInput("\(path) is the live database itself, not a backup of it")
        }
        guard access(path, R_OK) == 0 else {
            throw .invalidInput("cannot read the backup \(path): \(String(cString: strerror(errno)))")
        }

        // The background checkpoints' connection is closed while the pages are replaced, and
        // the apart writer's (after its write in progress; reopened on its next use).
        closeApartWriter()
        let checkpointedInBackground = database.stopBackgroundCheckpoints()
        defer { if checkpointedInBackground { database.checkpointInBackground() } }
        var source = try Database(path: path, readOnly: true)
        var migrated: String?
        defer {
            source.close()
            if let migrated { for suffix in ["", "-wal", "-shm", "-journal"] { unlink(migrated + suffix) } }
        }
        if let version = try? source.userVersion, version > 0, version < Migrations.currentVersion {
            // A backup of an older secretd: checked as it is, then brought up to date in a private
            // copy beside the database, which is what is checked item by item and copied.
            let problems = try Store(copyAt: URL(fileURLWithPath: path), database: source).integrityProblems()
            guard problems.isEmpty else {
                throw .corrupted("the backup fails SQLite's integrity check: \(problems.prefix(3).joined(separator: "; "))")
            }
            try Migrations.check(source)
            let copy = try Self.migratedCopy(of: source, beside: databaseURL.path)
            migrated = copy
            source.close()
            source = try Database(path: copy, readOnly: true)
        }
        try source.execute("BEGIN")  // one snapshot: what is checked is what is copied
        defer { try? source.execute("COMMIT") }
        let report = try Store(copyAt: URL(fileURLWithPath: path), database: source).verifiedAsCopy(keys: keys)

        try commitPending()  // nothing of the group left open on the live connection
        _ = try backup(to: previous, replacing: false, keys: keys)

        forgetRolledBack()
        do {
            try database.replaceContents(with: source)
            nextItemID = nil  // the backup's ids
        } catch {
            forgetRolledBack()
            throw error
        }
        forgetRolledBack()
        try Migrations.migrate(database)
        try commitPending()
        try database.execute("PRAGMA journal_mode = WAL")  // as ``init(directory:)`` leaves it, whatever the backup's header said
        return report
    }

    /// A copy of the older backup `original` brought up to this secretd's schema, in a new 0600
    /// file beside `database`; its path.
    private static func migratedCopy(of original: Database, beside database: String) throws(StoreError) -> String {
        var template = Array("\(database).restore-XXXXXX".utf8CString)
        let file = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }  // 0600, O_EXCL
        guard file >= 0 else { throw .io("cannot create a file beside \(database): \(String(cString: strerror(errno)))") }
        Glibc.close(file)
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        do {
            let copy = try Database(path: path)
            defer { copy.close() }
            try copy.replaceContents(with: original)
            try Migrations.migrate(copy)
            try copy.execute("PRAGMA journal_mode = DELETE")  // one file, read-only from now on
        } catch {
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
            throw error
        }
        return path
    }

    /// The name, beside the database, of the copy of the current data a restore at `date`
    /// keeps: `secretd.sqlite3.before-restore-YYYYMMDD-HHMMSS` (UTC), with `-2`, `-3`… when
    /// that name is taken.
    public func previousDataPath(at date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let stamp = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))-"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))"
        let base = databaseURL.path + ".before-restore-" + stamp
        var candidate = base
        var number = 1
        while access(candidate, F_OK) == 0 {
            number += 1
            candidate = "\(base)-\(number)"
        }
        return candidate
    }
}

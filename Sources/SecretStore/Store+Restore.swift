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

        let source = try Database(path: path, readOnly: true)
        defer { source.close() }
        try source.execute("BEGIN")  // one snapshot: what is checked is what is copied
        defer { try? source.execute("COMMIT") }
        let report = try Store(copyAt: URL(fileURLWithPath: path), database: source).verifiedAsCopy(keys: keys)

        try commitPending()  // nothing of the group left open on the live connection
        _ = try backup(to: previous, replacing: false, keys: keys)

        forgetRolledBack()
        do {
            try database.replaceContents(with: source)
        } catch {
            forgetRolledBack()
            throw error
        }
        forgetRolledBack()
        try Migrations.migrate(database)
        try commitPending()
        return report
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

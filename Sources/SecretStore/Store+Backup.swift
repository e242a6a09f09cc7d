// Backups of the whole store while secretd runs (`secretctl backup`, secretd's Maintenance1):
// a consistent copy taken on the store's own connection, still sealed by the keyrings' own
// passwords, verified before it is put in place, and put in place atomically.

import FoundationEssentials
import Glibc

extension Store {
    /// Writes a verified copy of the whole database (every keyring, alias, access group, sync
    /// state and history) to the absolute path `path`: copied with `VACUUM INTO` into a new
    /// 0600 file beside it, verified (``verifyBackup(at:keys:)``), synced, then moved into
    /// place (over an existing file only when `replacing`) and its directory synced. On any
    /// failure nothing is left at `path` that was not there before.
    ///
    /// - Parameter keys: the keys held for a collection of the copy (nil: locked, not opened).
    public func backup(
        to path: String, replacing: Bool, keys: (CollectionRecord) -> ItemKeys?
    ) throws(StoreError) -> BackupReport {
        guard path.hasPrefix("/"), !path.hasSuffix("/") else { throw .invalidInput("the backup's path must be an absolute file path") }
        if !replacing, access(path, F_OK) == 0 { throw .invalidInput("\(path) exists (replace it with --force)") }
        let slash = path.lastIndex(of: "/") ?? path.startIndex
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        var template = Array("\(directory)/.\(path[path.index(after: slash)...]).XXXXXX".utf8CString)
        let file = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }  // 0600, O_EXCL
        guard file >= 0 else { throw .io("cannot create a file in \(directory): \(String(cString: strerror(errno)))") }
        Glibc.close(file)
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var placed = false
        defer { if !placed { unlink(temporary) } }

        try commitPending()  // VACUUM runs outside a transaction; secretd's writes were committed
        try database.vacuum(into: temporary)
        let report = try Self.verifyBackup(at: temporary, keys: keys)
        try Self.sync(temporary, what: "the backup")
        if replacing {
            guard rename(temporary, path) == 0 else { throw .io("cannot put the backup at \(path): \(String(cString: strerror(errno)))") }
        } else {
            // link(2) fails if the name was taken since: never replaces a file without --force.
            guard link(temporary, path) == 0 else { throw .io("cannot put the backup at \(path): \(String(cString: strerror(errno)))") }
            unlink(temporary)
        }
        placed = true
        try Self.sync(directory, what: "the backup's directory", directory: true)
        return report
    }

    /// Verifies the backup at `path`: it opens as a database of a schema this secretd reads,
    /// passes SQLite's `PRAGMA integrity_check`, and every item of every collection `keys`
    /// gives keys for opens and decodes. Throws `.corrupted` naming what failed. Opens the file
    /// read-only.
    public static func verifyBackup(at path: String, keys: (CollectionRecord) -> ItemKeys?) throws(StoreError) -> BackupReport {
        guard access(path, R_OK) == 0 else { throw .io("cannot read \(path): \(String(cString: strerror(errno)))") }
        let database = try Database(path: path, readOnly: true)
        defer { database.close() }
        return try Store(copyAt: URL(fileURLWithPath: path), database: database).verifiedAsCopy(keys: keys)
    }

    /// The checks of ``verifyBackup(at:keys:)`` on this store, a copy opened read-only.
    func verifiedAsCopy(keys: (CollectionRecord) -> ItemKeys?) throws(StoreError) -> BackupReport {
        let copy = self
        let problems = try copy.integrityProblems()
        guard problems.isEmpty else {
            throw .corrupted("the backup fails SQLite's integrity check: \(problems.prefix(3).joined(separator: "; "))")
        }
        try Migrations.check(database)
        var report = BackupReport()
        for collection in try copy.collections() {
            report.keyrings += 1
            guard let held = keys(collection) else {
                report.notChecked += try copy.search([:], in: collection).count
                continue
            }
            let seals = try copy.checkSeals(of: collection, keys: held)
            if let failure = seals.failures.first {
                throw .corrupted("item \(failure.itemID) of keyring \(collection.name) does not open in the backup: \(failure.reason)")
            }
            report.opened += seals.opened
            report.notChecked += seals.notChecked
        }
        report.bytes = try copy.databaseSize()  // the whole file: the copy has no write-ahead log
        return report
    }

    /// Syncs the file (or directory) at `path` to disk.
    private static func sync(_ path: String, what: String, directory: Bool = false) throws(StoreError) {
        let file = open(path, (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC)
        guard file >= 0 else { throw .io("cannot open \(what) to sync it: \(String(cString: strerror(errno)))") }
        defer { Glibc.close(file) }
        guard fsync(file) == 0 || directory && errno == EINVAL else {
            throw .io("cannot sync \(what): \(String(cString: strerror(errno)))")
        }
    }
}

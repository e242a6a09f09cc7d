// io.github.secretd.Maintenance1
//
// Looking after the store itself (secretd's Maintenance1 interface): `secretctl check` has
// secretd run SQLite's integrity check on its own connection and open every item of the
// unlocked keyrings with the keys it holds, and reports what failed; `secretctl backup` has it
// write a verified copy of the whole store to a path the caller names.

import KeychainCore
import SecretStore
import DBusValues
import FoundationEssentials

extension Introspection {
    /// secretd's own: the store's integrity check, for unconfined clients outside a sandbox
    /// (its rule): a confined program must not learn how many items each keyring holds.
    static let maintenanceInterface = BusInterface(name: maintenance, objects: .service, methods: [
        Method(name: "Check", rule: .unconfined, results: [
            Argument(name: "integrity_problems", type: "as"), Argument(name: "keyrings", type: "a(ssbuua(xs))"),
        ], handler: .now { provider, _ throws(SecretServiceError) in try MaintenanceObject(provider).check() }),
        Method(name: "Backup", rule: .unconfined, arguments: [Argument(name: "path", type: "s"), Argument(name: "replace", type: "b")],
               results: [
                   Argument(name: "keyrings", type: "u"), Argument(name: "items_verified", type: "u"),
                   Argument(name: "items_not_checked", type: "u"), Argument(name: "bytes", type: "t"),
               ],
               handler: .now { provider, call throws(SecretServiceError) in
                   try MaintenanceObject(provider).backup(to: call.argument(0), replacing: call.argument(1))
               }),
        Method(name: "VerifyBackup", rule: .unconfined, arguments: [Argument(name: "path", type: "s")],
               results: [
                   Argument(name: "keyrings", type: "u"), Argument(name: "items_verified", type: "u"),
                   Argument(name: "items_not_checked", type: "u"), Argument(name: "bytes", type: "t"),
               ],
               handler: .now { provider, call throws(SecretServiceError) in try MaintenanceObject(provider).verifyBackup(at: call.argument(0)) }),
        Method(name: "Restore", rule: .unconfined, arguments: [Argument(name: "path", type: "s")],
               results: [
                   Argument(name: "keyrings", type: "u"), Argument(name: "items_verified", type: "u"),
                   Argument(name: "items_not_checked", type: "u"), Argument(name: "bytes", type: "t"),
                   Argument(name: "previous", type: "s"),
               ],
               handler: .now { provider, call throws(SecretServiceError) in try MaintenanceObject(provider).restore(from: call.argument(0)) }),
        Method(name: "AutomaticBackups", rule: .unconfined,
               results: [
                   Argument(name: "directory", type: "s"), Argument(name: "interval", type: "t"), Argument(name: "keep", type: "u"),
                   Argument(name: "last_file", type: "s"), Argument(name: "last_time", type: "x"), Argument(name: "last_failure", type: "s"),
               ],
               handler: .now { provider, _ throws(SecretServiceError) in MaintenanceObject(provider).automaticBackups() }),
    ])
}

/// secretd's Maintenance1 interface: the database's integrity and every item's seal checked
/// with the keys secretd holds, and verified backups.
struct MaintenanceObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `Check`: SQLite's findings (empty when the file is sound), then per keyring its name,
    /// label, whether it is unlocked, how many items opened, how many could not be tried (their
    /// key is not held: the keyring is locked), and the items that did not open, by id, with
    /// what failed. Nothing is written.
    fileprivate func check() throws(SecretServiceError) -> DBusValue {
        do {
            let integrity = try provider.keyring.integrityProblems()
            var keyrings: [DBusValue] = []
            for collection in try provider.keyring.collections() {
                let unlocked = !provider.keyring.isLocked(collection)
                var seals = Store.SealCheck()
                if let keys = provider.keyring.held(collection.id) {
                    seals = try provider.keyring.checkSeals(of: collection, keys: keys)
                    for failure in seals.failures {
                        Log.warning("item \(failure.itemID) of keyring \(collection.name) does not open: \(failure.reason)")
                    }
                } else {
                    seals.notChecked = try provider.keyring.search([:], in: collection).count
                }
                keyrings.append(.tuple([
                    .string(collection.name), .string(collection.label), .boolean(unlocked),
                    .uint32(UInt32(clamping: seals.opened)), .uint32(UInt32(clamping: seals.notChecked)),
                    .array(element: "(xs)", seals.failures.map { DBusValue.tuple([.int64($0.itemID), .string($0.reason)]) }),
                ]))
            }
            if !integrity.isEmpty { Log.warning("the integrity check of the database fails: \(integrity.joined(separator: "; "))") }
            return .tuple([.array(element: "s", integrity.map(DBusValue.string)), .array(element: "(ssbuua(xs))", keyrings)])
        } catch {
            Log.error("cannot check the store: \(error)")
            throw .failed("cannot check the store: \(error)")
        }
    }

    /// `Backup`: a verified copy of the whole store at `path` (absolute; over an existing file
    /// only when `replacing`), taken on the main loop between calls, after the writes before it
    /// are committed and acknowledged; the copy's items are opened with the keys held for the
    /// same keyring (same id and identity) of the live store.
    ///
    /// A path, not a descriptor: the copy is written beside the target and renamed over it,
    /// which needs the directory; only unconfined callers outside a sandbox (the user's own
    /// programs, which may write there themselves) may call it.
    fileprivate func backup(to path: String, replacing: Bool) throws(SecretServiceError) -> DBusValue {
        do {
            let report = try writeBackup(to: path, replacing: replacing)
            Log.info("wrote a backup of the store to \(path): \(report.keyrings) keyrings, \(report.opened) items verified")
            return Self.reply(report)
        } catch .invalidInput(let why) {
            throw .invalidArgs(why)
        } catch {
            Log.warning("cannot back up the store to \(path): \(error)")
            throw .failed("cannot back up the store: \(error)")
        }
    }

    /// A verified backup of the whole store at `path`, after the writes before it are
    /// committed and acknowledged: `Backup`'s, and each automatic backup's (``AutomaticBackups``).
    func writeBackup(to path: String, replacing: Bool) throws(StoreError) -> Store.BackupReport {
        provider.commitBarrier.flush()  // earlier writes durable and answered before the copy
        return try provider.keyring.backup(to: path, replacing: replacing, keys: try heldKeys())
    }

    /// `Restore`: the whole store replaced by the backup at `path` (absolute) while secretd
    /// runs, on the main loop between calls (the calls that arrive meanwhile wait and are
    /// answered after it). The backup is checked first as `VerifyBackup` checks it, the current
    /// data is kept beside the database (``Store/previousDataPath(at:)``, a verified copy),
    /// then the backup's pages replace the live ones in one transaction. Afterwards every
    /// keyring is locked (the keys held were for the data replaced; each opens with the password
    /// it had when the backup was taken), the session keyring starts empty as at a restart, a
    /// PIN set for a keyring that is not the same keyring any more is cleared, and clients,
    /// sync and the SSH agent hear what changed (``KeyringEvent/restored(appeared:)``).
    /// Replies the check's report and where the replaced data is kept.
    fileprivate func restore(from path: String) throws(SecretServiceError) -> DBusValue {
        guard path.hasPrefix("/") else { throw .invalidArgs("the backup's path must be absolute") }
        provider.commitBarrier.flush()  // earlier writes durable and answered before the swap
        let keyring = provider.keyring
        let previous = keyring.store.previousDataPath(at: provider.clock())
        let pinKeyring = provider.quickUnlock.collectionID.flatMap { id in (try? keyring.collections())?.first { $0.id == id } }
        let report: Store.BackupReport
        do {
            report = try keyring.restore(from: path, keepingCurrentAt: previous, keys: try heldKeys())
        } catch .invalidInput(let why) {
            throw .invalidArgs("cannot restore: \(why)")
        } catch .newerSchema(let found, let supported) {
            throw .failed("cannot restore: the backup was written by a newer secretd (schema \(found); this one reads up to \(supported))")
        } catch .corrupted(let what) {
            throw .failed("cannot restore: the backup is damaged or not secretd's: \(what)")
        } catch {
            Log.warning("cannot restore the store from \(path): \(error)")
            throw .failed("cannot restore: \(error)")
        }
        if let pinKeyring, !((try? keyring.collections()) ?? []).contains(where: { $0.id == pinKeyring.id && $0.uuid == pinKeyring.uuid }) {
            provider.quickUnlock.clear()
        }
        do {
            try provider.resetSessionCollection()
        } catch {
            Log.error("cannot make a new session keyring after the restore: \(error)")
        }
        Log.info(
            "restored the store from \(path): \(report.keyrings) keyrings, \(report.opened) items verified; "
                + "the data it replaced is kept in \(previous); every keyring is locked")
        var reply = Self.reply(report).tuple ?? []
        reply.append(.string(previous))
        return .tuple(reply)
    }

    /// `AutomaticBackups`: where they go, every how many seconds (0: off), how many are kept,
    /// and the last one taken by this secretd or found in the directory (its path and Unix
    /// time; empty and 0: none), with why the last attempt failed (empty: it did not).
    fileprivate func automaticBackups() -> DBusValue {
        let backups = provider.automaticBackups
        let last = backups.lastBackup()
        return .tuple([
            .string(backups.directory.path), .uint64(UInt64(backups.interval)), .uint32(UInt32(clamping: backups.keep)),
            .string(last?.path ?? ""), .int64(Int64(last?.date.timeIntervalSince1970 ?? 0)), .string(backups.lastFailure ?? ""),
        ])
    }

    /// `VerifyBackup`: the backup at `path` (absolute) checked as ``backup(to:replacing:)``
    /// checks its copy, opened read-only: SQLite's integrity check, a schema this secretd
    /// reads, and every item of the keyrings whose keys are held opened in it.
    fileprivate func verifyBackup(at path: String) throws(SecretServiceError) -> DBusValue {
        guard path.hasPrefix("/") else { throw .invalidArgs("the backup's path must be absolute") }
        do {
            return Self.reply(try Store.verifyBackup(at: path, keys: try heldKeys()))
        } catch {
            throw .failed("the backup does not verify: \(error)")
        }
    }

    /// The keys secretd holds for a keyring of a copy: those of the live keyring with the same
    /// id and identity (uuid), while it is unlocked or keeps its after-first-unlock key.
    private func heldKeys() throws(StoreError) -> (Store.CollectionRecord) -> Store.ItemKeys? {
        let live = Dictionary(try provider.keyring.collections().map { ($0.id, $0) }) { first, _ in first }
        let keyring = provider.keyring
        return { copy in
            guard let current = live[copy.id], current.uuid == copy.uuid else { return nil }
            return keyring.held(copy.id)
        }
    }

    /// The reply of `Backup` and `VerifyBackup`.
    private static func reply(_ report: Store.BackupReport) -> DBusValue {
        .tuple([
            .uint32(UInt32(clamping: report.keyrings)), .uint32(UInt32(clamping: report.opened)),
            .uint32(UInt32(clamping: report.notChecked)), .uint64(UInt64(clamping: report.bytes)),
        ])
    }
}

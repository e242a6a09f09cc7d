import FoundationEssentials
import Keychain
import KeychainCore

/// `secretctl check [--json]`: has secretd check its database (SQLite's integrity check, on
/// its own connection) and open every item of the unlocked keyrings with the keys it holds;
/// prints what is wrong and what to do, and exits with ``ExitStatus/failed`` when anything is.
enum CheckCommand: Verb {
    static let spec = CommandSpec(
        name: "check",
        abstract: "Check secretd's database and every item of the unlocked keyrings; say what is wrong and what to do (secretd).",
        arguments: [], options: [Common.json],
        examples: ["secretctl check", "secretctl check --json"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let check = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.checkStore() }
        // A secretd older than automatic backups does not have them: the check goes on without.
        let backups = try? KeychainProvider.automaticBackups()
        if parsed[Common.json] {
            var object = json(check)
            if let backups { object["automatic_backups"] = json(backups) }
            try Output.json(object)
        } else {
            Terminal.writeOutput(report(check) + (backups.map(report) ?? ""))
        }
        if !check.isSound { throw .silent(status: .failed) }
    }

    /// The object path of item `id` of keyring `name`.
    private static func itemPath(_ name: String, _ id: Int64) -> String {
        SecretServiceNames.Path.collection(name) + "/\(id)"
    }

    /// The check as `--json` prints it (keys documented in secretctl(1)).
    static func json(_ check: KeychainProvider.StoreCheck) -> [String: Any] {
        [
            "ok": check.isSound,
            "database": ["ok": check.integrityProblems.isEmpty, "problems": check.integrityProblems],
            "keyrings": check.keyrings.map { keyring -> [String: Any] in
                [
                    "name": keyring.name, "label": keyring.label, "unlocked": keyring.isUnlocked,
                    "opened": keyring.opened, "not_checked": keyring.notChecked,
                    "damaged": keyring.failures.map { ["id": Int($0.id), "path": itemPath(keyring.name, $0.id), "reason": $0.reason] },
                ]
            },
        ]
    }

    /// The automatic backups as `--json` prints them.
    static func json(_ backups: KeychainProvider.AutomaticBackups) -> [String: Any] {
        var object: [String: Any] = ["directory": backups.directory, "interval": backups.interval, "keep": backups.keep]
        if let file = backups.lastFile { object["last"] = file }
        if let time = backups.lastTime { object["last_time"] = Int(time) }
        if let failure = backups.lastFailure { object["last_failure"] = failure }
        return object
    }

    /// The automatic backups as a person reads them: one line, and why the last one failed.
    static func report(_ backups: KeychainProvider.AutomaticBackups) -> String {
        guard backups.interval > 0 else { return "automatic backups: off (backup-interval in secretd.conf)\n" }
        var line = "automatic backups: every \(backups.interval) s, \(backups.keep) kept in \(backups.directory)"
        if let file = backups.lastFile, let time = backups.lastTime {
            line += "; last \(file) (\(Date(timeIntervalSince1970: Double(time)).formatted(.iso8601)))"
        } else {
            line += "; none yet"
        }
        if let failure = backups.lastFailure { line += "\nthe last automatic backup failed: \(failure)" }
        return line + "\n"
    }

    /// The check as a person reads it: the database, then each keyring, then what to do.
    static func report(_ check: KeychainProvider.StoreCheck) -> String {
        var lines: [String] = []
        var advice: [String] = []
        if check.integrityProblems.isEmpty {
            lines.append("database: ok (SQLite integrity check)")
        } else {
            lines.append("database: DAMAGED, SQLite's integrity check fails:")
            lines += check.integrityProblems.map { "  \($0)" }
            advice.append(
                "The database file is damaged. Stop secretd, move its database (secretd.sqlite3 in its data directory, "
                    + "see secretd(1)) aside as it is, and put your last good backup (secretctl backup, or an automatic one) in "
                    + "its place; while secretd still runs, secretctl restore FILE does it and keeps the damaged data beside.")
        }
        for keyring in check.keyrings {
            let name = "keyring \(keyring.name) (\"\(keyring.label)\")"
            var line = "\(name): \(keyring.opened) item\(keyring.opened == 1 ? "" : "s") opened"
            if !keyring.isUnlocked || keyring.notChecked > 0 {
                line += ", \(keyring.notChecked) not checked (locked)"
            }
            line += keyring.failures.isEmpty ? (keyring.isUnlocked ? ", all sound" : "") : ", \(keyring.failures.count) DAMAGED"
            lines.append(line)
            for failure in keyring.failures {
                lines.append("  item \(failure.id) (\(itemPath(keyring.name, failure.id))) does not open: \(failure.reason)")
            }
            if keyring.notChecked > 0 {
                advice.append(
                    "\(name) is locked, so its items were not checked: unlock it ("
                        + (keyring.name == SecretServiceNames.loginCollection ? "secretctl unlock" : "with its password, e.g. in Seahorse")
                        + ") and run secretctl check again.")
            }
            if !keyring.failures.isEmpty {
                advice.append(
                    "\(name) has items whose sealed contents do not open: their secret cannot be read. Restore a backup made "
                        + "before the damage, or delete each such item (e.g. busctl --user call org.freedesktop.secrets PATH "
                        + "org.freedesktop.Secret.Item Delete) and store its secret again.")
            }
        }
        lines.append(check.isSound ? "All checked is sound." : "Something is wrong.")
        return (lines + advice.map { "What to do: " + $0 }).joined(separator: "\n") + "\n"
    }
}

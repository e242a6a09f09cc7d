import Keychain
import KeychainCore

/// `secretctl restore [--json] FILE`: has secretd replace its whole store with the backup FILE
/// while it runs: the backup is checked first, the current data is kept beside the database,
/// and afterwards every keyring is locked.
enum RestoreCommand: Verb {
    /// `FILE`: the backup to restore.
    static let file = Positional<String>(
        "FILE",
        help: "A backup from secretctl backup (or an automatic one). secretd checks it first (SQLite's integrity check, a schema "
            + "it reads, every item of the keyrings it holds keys for opened) and refuses a missing, damaged, foreign or newer "
            + "file, or its live database, changing nothing. Then it keeps the current data beside its database "
            + "(secretd.sqlite3.before-restore-YYYYMMDD-HHMMSS, 0600: restore that file to undo) and replaces the data while "
            + "it runs; clients' calls wait meanwhile. Afterwards every keyring is locked: unlock each with the password it "
            + "had when the backup was taken. The session keyring starts empty; a PIN set for a keyring the backup replaced "
            + "by another is cleared.")

    static let spec = CommandSpec(
        name: "restore",
        abstract: "Replace secretd's whole store with the backup FILE, checked first; the current data is kept beside it, "
            + "every keyring is locked after (secretd).",
        arguments: [file], options: [Common.json],
        examples: [
            "secretctl restore /media/usb/secretd.sqlite3",
            "secretctl restore ~/.local/share/secretd/backups/secretd-20261205-031500.sqlite3",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let path = BackupCommand.absolute(parsed[Self.file])
        let report = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.restoreStore(from: path) }
        let backup = report.backup
        if parsed[Common.json] {
            try Output.json(BackupCommand.json(backup, file: path).merging(["previous": report.previous]) { _, new in new })
        } else {
            var text = "restored \(path): " + BackupCommand.summary(backup, items: "verified")
            if backup.notChecked > 0 {
                text += ", \(backup.notChecked) of keyrings whose keys secretd did not hold restored without being opened"
            }
            text += "\nthe data it replaced is kept in \(report.previous) (secretctl restore that file to undo)"
            text += "\nevery keyring is locked: unlock each with the password it had when the backup was taken (secretctl unlock)\n"
            Terminal.writeOutput(text)
        }
    }
}

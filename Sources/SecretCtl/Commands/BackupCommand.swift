import Glibc
import Keychain
import KeychainCore

/// `secretctl backup [--force] [--json] FILE`: has secretd write a verified copy of its whole
/// store to FILE while it runs: every keyring still sealed by its own password, written
/// beside FILE and renamed into place, then opened and checked item by item with the keys
/// secretd holds.
enum BackupCommand: Verb {
    /// `FILE`: where the backup goes.
    static let file = Positional<String>("FILE", help: "The backup file to create (mode 0600), written by secretd.")
    /// `--force`: replace FILE if it exists.
    static let force = LongOption<Bool>("force", help: "Replace FILE if it exists.")
    /// `--verify`: check an existing backup instead of writing one.
    static let verify = LongOption<Bool>(
        "verify", help: "Check the existing backup FILE instead: integrity, and every item of the unlocked keyrings opened in it.")

    static let spec = CommandSpec(
        name: "backup",
        abstract: "Write a verified copy of secretd's whole store to FILE, still sealed by each keyring's password (secretd).",
        arguments: [file], options: [force, verify, Common.json],
        examples: [
            "secretctl backup ~/secretd-$(date +%F).sqlite3", "secretctl backup --force /media/usb/secretd.sqlite3",
            "secretctl backup --verify /media/usb/secretd.sqlite3",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let path = absolute(parsed[Self.file])
        let replacing = parsed[Self.force]
        if parsed[Self.verify] {
            guard !replacing else { throw .usage("--verify writes nothing; it takes no --force", command: spec.name) }
            return try verify(path, json: parsed[Common.json])
        }
        if !replacing, access(path, F_OK) == 0 {
            throw .failure("\(path) exists; --force replaces it", status: .failed)
        }
        let report = try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainProvider.backupStore(to: path, replacing: replacing)
        }
        if parsed[Common.json] {
            try Output.json(json(report, file: path))
        } else {
            var text = "wrote \(path): " + summary(report, items: "verified")
            if report.notChecked > 0 {
                text += ", \(report.notChecked) in locked keyrings copied but not opened (unlock them and back up again to verify them)"
            }
            Terminal.writeOutput(text + "\n")
        }
    }

    /// `--verify`: secretd's check of the backup at `path`, printed; exit 6 when it fails.
    private static func verify(_ path: String, json: Bool) throws(CommandLineError) {
        let report = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.verifyBackup(at: path) }
        if json {
            try Output.json(Self.json(report, file: path))
        } else {
            var text = "\(path) verifies: " + summary(report, items: "opened")
            if report.notChecked > 0 { text += ", \(report.notChecked) of keyrings whose keys secretd does not hold not opened" }
            Terminal.writeOutput(text + "\n")
        }
    }

    /// `path` as secretd must get it: absolute, relative ones taken from the current directory.
    static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let directory = String(cString: buffer)
        return (directory == "/" ? "" : directory) + "/" + path
    }

    /// A report of secretd's on a backup as `--json` prints it for `backup`, `backup --verify`
    /// and `restore` (keys documented in secretctl(1)).
    static func json(_ report: KeychainProvider.BackupReport, file: String) -> [String: Any] {
        [
            "file": file, "keyrings": report.keyrings, "items_verified": report.verified,
            "items_not_checked": report.notChecked, "bytes": Int(clamping: report.bytes),
        ]
    }

    /// "N keyrings, M items `items`": how many keyrings the copy holds and how many of its
    /// items were opened.
    static func summary(_ report: KeychainProvider.BackupReport, items: String) -> String {
        "\(report.keyrings) keyring\(report.keyrings == 1 ? "" : "s"), \(report.verified) item\(report.verified == 1 ? "" : "s") \(items)"
    }
}

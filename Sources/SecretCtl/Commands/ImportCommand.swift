import FoundationEssentials
import Keychain
import KeychainCore

/// `secretctl import FILE`: adds the items of a secretctl export (``ExportFile``) or of a
/// browser's CSV (``CSVImport``); items that exist are skipped unless `--replace`.
/// `secretctl import gnome-keyring [DIR]`: gnome-keyring's keyrings (``GnomeKeyringImport``).
enum ImportCommand: Verb {
    /// `FILE`, an export or a CSV file (told apart by the export's magic bytes), or the word
    /// `gnome-keyring`.
    static let file = Positional<String>(
        "FILE", help: "A secretctl export, a CSV file, or gnome-keyring (its keyrings; a file of that name: ./gnome-keyring).")
    /// `DIR`, with `gnome-keyring` only.
    static let directory = Positional<String?>(
        "DIR", help: "With gnome-keyring: where its *.keyring files are (default: ~/.local/share/keyrings).")
    /// `--replace`: overwrite existing items instead of skipping them.
    static let replace = LongOption<Bool>("replace", help: "Overwrite items that already exist (default: skip them; not with gnome-keyring).")
    /// `--password-stdin`: the gnome-keyring login keyring's password on standard input.
    static let passwordStdin = LongOption<Bool>(
        "password-stdin", help: "With gnome-keyring: read the passwords to try on standard input, one per line, the login keyring's first.")

    /// The word that selects gnome-keyring's files.
    static let gnomeKeyring = "gnome-keyring"

    static let spec = CommandSpec(
        name: "import",
        abstract: "Add the items of an export, of a browser's CSV (name,url,username,password), or of gnome-keyring's keyrings.",
        arguments: [file, directory], options: [replace, passwordStdin],
        examples: [
            "secretctl import keyring.export", "secretctl import passwords.csv", "secretctl import gnome-keyring",
            "secretctl import gnome-keyring --password-stdin < login-password",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let path = parsed[Self.file]
        let replace = parsed[Self.replace]
        if path == Self.gnomeKeyring {
            guard !replace else { throw .usage("--replace does not go with gnome-keyring: items there already are skipped", command: spec.name) }
            return try GnomeKeyringImport.run(directory: parsed[Self.directory], passwordOnStandardInput: parsed[Self.passwordStdin])
        }
        guard parsed[Self.directory] == nil, !parsed[Self.passwordStdin] else {
            throw .usage("DIR and --password-stdin go with gnome-keyring only", command: spec.name)
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw .failure("cannot read \(path)", status: .usage) }
        var items: [ExportFile.Item]
        var skipped = 0
        if ExportFile.isExport(data) {
            items = try ExportFile.open(data, passphrase: try ExportPassphrase.read(confirm: false))
        } else {
            guard let text = String(data: data, encoding: .utf8) else {
                throw .failure("\(path) is neither a secretctl export nor a UTF-8 CSV file", status: .usage)
            }
            (items, skipped) = try CSVImport.items(text)
        }
        var imported = 0
        var replaced = 0
        for item in items {
            let existing = try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.search(item.attributes, unlock: false, loadSecrets: false)
            }.contains { $0.attributes == item.attributes }
            if existing && !replace {
                skipped += 1
                continue
            }
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.store(item.attributes, label: item.label, secret: item.secret, collection: nil)
            }
            if existing { replaced += 1 } else { imported += 1 }
        }
        Terminal.writeOutput("imported \(imported), replaced \(replaced), skipped \(skipped)\n")
    }
}

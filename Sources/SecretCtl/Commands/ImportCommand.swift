import FoundationEssentials
import Keychain
import KeychainCore

/// `secretctl import FILE`: adds the items of a secretctl export (``ExportFile``) or of a
/// browser's CSV (``CSVImport``); items that exist are skipped unless `--replace`.
enum ImportCommand: Verb {
    /// `FILE`, an export or a CSV file (told apart by the export's magic bytes).
    static let file = Positional<String>("FILE", help: "A secretctl export, or a CSV file.")
    /// `--replace`: overwrite existing items instead of skipping them.
    static let replace = LongOption<Bool>("replace", help: "Overwrite items that already exist (default: skip them).")

    static let spec = CommandSpec(
        name: "import", abstract: "Add the items of an export, or of a browser's CSV (name,url,username,password).",
        arguments: [file], options: [replace],
        examples: ["secretctl import keyring.export", "secretctl import passwords.csv"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let path = parsed[Self.file]
        let replace = parsed[Self.replace]
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

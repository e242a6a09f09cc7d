import FoundationEssentials
import Keychain
import KeychainCore

/// `secretctl import FILE`: adds the items of a secretctl export (``ExportFile``), of a KeePass
/// database (``KDBXImport``), of a password manager's export (``PasswordManagerImport``:
/// Bitwarden, Apple Passwords, 1Password) or of a browser's CSV (``CSVImport``); items that
/// exist are skipped unless `--replace`.
/// `secretctl import gnome-keyring [DIR]`: gnome-keyring's keyrings; `secretctl import oo7
/// [DIR|FILE]`: oo7's, or one libsecret file keyring (``GnomeKeyringImport``).
/// `secretctl import kwallet [DIR|FILE.kwl]`: KDE's wallets (``KWalletImport``).
/// `secretctl import secret-service [--from NAME]`: the keyrings of the provider running now
/// (``SecretServiceImport``).
enum ImportCommand: Verb {
    /// `FILE`, an export, a KeePass database or a CSV file (told apart by their magic bytes), or
    /// the word `gnome-keyring`, `oo7`, `kwallet` or `secret-service`.
    static let file = Positional<String>(
        "FILE",
        help: "A secretctl export or a KeePass database (KDBX 4 or 3.1, from KeePassXC or KeePass; its passphrase or password is asked for without echo, or is the first line of standard input), a Bitwarden (JSON or CSV), Apple Passwords or 1Password (CSV) export, a browser's CSV file, gnome-keyring or oo7 (their keyring files), kwallet (KDE's wallets) or secret-service (the provider running now); a file of such a name: ./gnome-keyring. Or keepassxc, bitwarden, apple or 1password, then the FILE, which must be of that kind.")
    /// `DIR`, with `gnome-keyring`, `oo7` and `kwallet` only (`oo7` and `kwallet` also take one file).
    static let directory = Positional<String?>(
        "DIR",
        help: "With gnome-keyring: where its *.keyring files are (default: ~/.local/share/keyrings). With oo7: where its files are (default: ~/.local/share/keyrings/v1), or one libsecret file keyring (a Flatpak app's ~/.var/app/APP/data/keyrings/default.keyring). With kwallet: where its wallets are (default: ~/.local/share/kwalletd), or one FILE.kwl. After keepassxc, bitwarden, apple or 1password: the FILE.")
    /// `--replace`: overwrite existing items instead of skipping them.
    static let replace = LongOption<Bool>("replace", help: "Overwrite items that already exist (default: skip them; not with gnome-keyring, oo7 or kwallet).")
    /// `--password-stdin`: passwords on standard input instead of typed ones.
    static let passwordStdin = LongOption<Bool>(
        "password-stdin",
        help: "With gnome-keyring or oo7: read the passwords to try on standard input, one per line, the login keyring's first. With kwallet: the passwords to try on every wallet, one per line. With secret-service: read the password of secretd's login keyring.")
    /// `--key-file FILE`: the key file of a KeePass database.
    static let keyFile = LongOption<String?>(
        "key-file", value: "FILE",
        help: "With a KeePass database: its key file, with the password or alone (then an empty password: press Enter at the prompt).")
    /// `--collection ALIAS`: the keyring a file's items go into.
    static let collection = LongOption<String?>(
        "collection", value: "ALIAS",
        help: "With a file: the keyring its items go into, by its alias, such as session or one set with secret-tool's --collection (default: the default keyring); an item counts as there already only in that keyring (without it: in any keyring).")
    /// `--from NAME`: the bus name of the provider `secret-service` reads.
    static let from = LongOption<String?>(
        "from", value: "NAME", help: "With secret-service: the bus name of the provider to read (default org.freedesktop.secrets).")

    /// The words that select gnome-keyring's and oo7's files.
    static let keyringFiles: [String: GnomeKeyringImport.Source] = ["gnome-keyring": .gnomeKeyring, "oo7": .oo7]
    /// The word that selects the provider running now.
    static let secretService = "secret-service"

    static let spec = CommandSpec(
        name: "import",
        abstract: "Add the items of an export, of a KeePass database, of Bitwarden's, Apple Passwords' or 1Password's export, of a browser's CSV (name,url,username,password), of gnome-keyring's or oo7's keyrings, of KWallet's wallets, or of the provider running now.",
        arguments: [file, directory], options: [replace, passwordStdin, keyFile, collection, from],
        examples: [
            "secretctl import keyring.export", "secretctl import Passwords.kdbx", "secretctl import --key-file Passwords.keyx Passwords.kdbx",
            "secretctl import keepassxc Passwords.kdbx --collection work   # an alias",
            "secretctl import passwords.csv", "secretctl import bitwarden_export.json",
            "secretctl import gnome-keyring", "secretctl import oo7",
            "secretctl import oo7 ~/.var/app/org.example.App/data/keyrings/default.keyring",
            "secretctl import gnome-keyring --password-stdin < login-password", "secretctl import kwallet",
            "secretctl import kwallet ~/.local/share/kwalletd/work.kwl", "secretctl import secret-service",
        ])

    /// The entries of a KeePass database, opened with the password read as an export's
    /// passphrase is (typed without echo, or the first line of standard input) and the key file.
    private static func keePassDatabase(_ data: Data, keyFilePath: String?) throws(CommandLineError) -> KDBXImport.Contents {
        var keyFile: Data?
        if let keyFilePath {
            guard let contents = FileManager.default.contents(atPath: keyFilePath) else {
                throw .failure("cannot read the key file \(keyFilePath)", status: .usage)
            }
            keyFile = contents
        }
        defer { keyFile?.wipe() }
        var password = try ExportPassphrase.read(confirm: false, what: "database password", allowEmpty: keyFile != nil)
        defer { password.wipe() }
        return try KDBXImport.contents(data, key: KDBXImport.Key(password: password.isEmpty ? nil : password, keyFile: keyFile))
    }

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let word = parsed[Self.file]
        let replace = parsed[Self.replace]
        if word == Self.secretService || Self.keyringFiles[word] != nil || word == KWalletImport.word, parsed[Self.collection] != nil {
            throw .usage("--collection goes with a file: \(word) brings its keyrings as they are", command: spec.name)
        }
        if word == Self.secretService {
            guard !replace, parsed[Self.directory] == nil else {
                throw .usage("secret-service takes no DIR and no --replace: items there already are skipped", command: spec.name)
            }
            if let name = parsed[Self.from], !SecretServiceNames.isWellKnownBusName(name) {
                throw .usage("--from needs a well-known bus name, such as org.freedesktop.secrets", command: spec.name)
            }
            return try SecretServiceImport.run(from: parsed[Self.from], passwordOnStandardInput: parsed[Self.passwordStdin])
        }
        guard parsed[Self.from] == nil else { throw .usage("--from goes with secret-service only", command: spec.name) }
        let keyFilePath = parsed[Self.keyFile]
        if let source = Self.keyringFiles[word] {
            guard !replace else { throw .usage("--replace does not go with \(word): items there already are skipped", command: spec.name) }
            return try GnomeKeyringImport.run(source, path: parsed[Self.directory], passwordOnStandardInput: parsed[Self.passwordStdin])
        }
        if word == KWalletImport.word {
            guard !replace else { throw .usage("--replace does not go with kwallet: items there already are skipped", command: spec.name) }
            return try KWalletImport.run(path: parsed[Self.directory], passwordOnStandardInput: parsed[Self.passwordStdin])
        }
        // `import keepassxc FILE`, `import bitwarden FILE`, …: the file named, which must be of that kind.
        var path = word
        var named: FileKind?
        if let kind = FileKind(rawValue: word), let file = parsed[Self.directory] {
            (named, path) = (kind, file)
        } else if parsed[Self.directory] != nil {
            throw .usage("DIR goes with gnome-keyring, oo7 and kwallet only (and a FILE after keepassxc, bitwarden, apple or 1password)", command: spec.name)
        }
        guard !parsed[Self.passwordStdin] else {
            throw .usage("--password-stdin goes with gnome-keyring, oo7, kwallet and secret-service only", command: spec.name)
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw .failure("cannot read \(path)", status: .usage) }
        if let named, !named.matches(data) {
            throw .failure("\(path) is not \(named.description); nothing was imported", status: .usage)
        }
        let collection = parsed[Self.collection]
        guard keyFilePath == nil || KDBXImport.isDatabase(data) else {
            throw .usage("--key-file goes with a KeePass database only, and \(path) is none", command: spec.name)
        }
        var items: [ExportFile.Item]
        var skipped = 0
        if KDBXImport.isDatabase(data) {
            let contents = try keePassDatabase(data, keyFilePath: keyFilePath)
            items = contents.items
            skipped = contents.empty + contents.recycled
            var note = "secretctl: \(path) is a KeePass database (KDBX \(contents.version))"
            if contents.empty > 0 { note += "; \(contents.empty) \(contents.empty == 1 ? "entry has" : "entries have") neither a password nor notes" }
            if contents.recycled > 0 { note += "; \(contents.recycled) \(contents.recycled == 1 ? "entry is" : "entries are") in the recycle bin" }
            if contents.attachments > 0 {
                note += "; \(contents.attachments) \(contents.attachments == 1 ? "attachment is" : "attachments are") not imported (an item keeps one secret)"
            }
            Terminal.writeError(note + "\n")
        } else if ExportFile.isExport(data) {
            items = try ExportFile.open(data, passphrase: try ExportPassphrase.read(confirm: false))
        } else if let source = PasswordManagerImport.source(of: data) {
            let contents = try PasswordManagerImport.contents(data, source: source)
            items = contents.items
            skipped = contents.empty + contents.otherKinds
            var note = "secretctl: \(path) is \(source.rawValue)"
            if contents.empty > 0 { note += "; \(contents.empty) \(contents.empty == 1 ? "entry has" : "entries have") neither a password nor notes" }
            if contents.otherKinds > 0 { note += "; \(contents.otherKinds) cards, identities or SSH keys are not imported" }
            Terminal.writeError(note + "\n")
        } else {
            guard let text = String(data: data, encoding: .utf8) else {
                throw .failure("\(path) is neither a secretctl export, a password manager's export nor a UTF-8 CSV file", status: .usage)
            }
            (items, skipped) = try CSVImport.items(text)
        }
        var imported = 0
        var replaced = 0
        var failed: [CommandLineError] = []
        var progress = ProgressBar("importing", total: items.count)
        let batches = Self.batches(items)
        let store = KeychainAttributes.BatchStore(
            batches.map { items[$0].map { ($0.label, $0.attributes, $0.secret) } }, collection: collection, replace: replace)
        for (index, batch) in batches.enumerated() {
            // A batch goes in one call and one transaction of secretd's (Import1.ImportItems);
            // a provider without it, a locked keyring or an item refused take the batch one
            // item at a time, as before.
            let counts = try CommandLineError.keychain { () throws(KeychainError) in try store.store(index) }
            if let counts {
                imported += counts.stored
                replaced += counts.replaced
                skipped += counts.skipped
            } else {
                for item in items[batch] {
                    // One item the provider refuses (too large, over a quota) fails alone; a provider
                    // that is gone or locked stops the import.
                    do throws(CommandLineError) {
                        let existing = try CommandLineError.keychain { () throws(KeychainError) in
                            try KeychainAttributes.search(item.attributes, in: collection, unlock: false, loadSecrets: false)
                        }.contains { $0.attributes == item.attributes }
                        if existing && !replace {
                            skipped += 1
                            continue
                        }
                        try CommandLineError.keychain { () throws(KeychainError) in
                            try KeychainAttributes.store(item.attributes, label: item.label, secret: item.secret, collection: collection)
                        }
                        if existing { replaced += 1 } else { imported += 1 }
                    } catch {
                        guard error.status == .failed || error.status == .usage else {
                            progress?.finish()
                            throw error
                        }
                        failed.append(error)
                    }
                }
            }
            progress?.show(batch.upperBound)
        }
        progress?.finish()
        Terminal.writeOutput("imported \(imported), replaced \(replaced), skipped \(skipped), failed \(failed.count)\n")
        if let first = failed.first {
            Terminal.writeError("secretctl: \(failed.count) items were not stored; the first: \(first.detail)\n")
            throw .silent(status: .failed)
        }
    }

    /// The ranges of `items` that go in one call: ``KeychainAttributes/pageSize`` items, fewer
    /// when their secrets, labels and attributes pass 4 MiB (secrets may be 1 MiB each).
    static func batches(_ items: [ExportFile.Item]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        var bytes = 0
        for (index, item) in items.enumerated() {
            let size = item.secret.count + item.label.utf8.count + item.attributes.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            if index > start, index - start >= KeychainAttributes.pageSize || bytes + size > 4 << 20 {
                ranges.append(start..<index)
                (start, bytes) = (index, 0)
            }
            bytes += size
        }
        if start < items.count { ranges.append(start..<items.count) }
        return ranges
    }

    /// The kinds of file `import WORD FILE` names (a FILE alone is told by its contents).
    enum FileKind: String {
        case keepassxc, bitwarden, apple
        case onePassword = "1password"

        /// What the kind is, for messages.
        var description: String {
            switch self {
            case .keepassxc: "a KeePass database"
            case .bitwarden: "a Bitwarden export"
            case .apple: "an Apple Passwords export"
            case .onePassword: "a 1Password export"
            }
        }

        /// Whether `data` is of this kind.
        func matches(_ data: Data) -> Bool {
            switch self {
            case .keepassxc: KDBXImport.isDatabase(data)
            case .bitwarden: [.bitwardenJSON, .bitwardenCSV].contains(PasswordManagerImport.source(of: data))
            case .apple: PasswordManagerImport.source(of: data) == .apple
            case .onePassword: PasswordManagerImport.source(of: data) == .onePassword
            }
        }
    }
}

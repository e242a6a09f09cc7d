import FoundationEssentials
import KeychainCore
import Glibc
import Keychain

/// What each verb does, once its command line is parsed.
enum Commands {
    static func run(_ verb: String, _ parsed: ParsedCommand) throws(CommandLineError) {
        switch verb {
        case "git-credential":
            try GitCredential.run(parsed.arguments["ACTION"]!)
        case "login":
            try LoginCommand.run(parsed)
        case "setup":
            try SetupCommand.run(parsed)
        case "whoami", "groups":
            try AccessGroupsCommand.run(verb, parsed)
        case "completions":
            guard let script = Completions.script(for: parsed.arguments["SHELL"]!, SecretCtl.commands) else {
                throw .usage("completions are available for bash, zsh and fish", command: verb)
            }
            Terminal.writeOutput(script)
        case "export":
            try export(to: parsed.arguments["FILE"]!, force: parsed.flags.contains("force"))
        case "import":
            try importFile(parsed.arguments["FILE"]!, replace: parsed.flags.contains("replace"))
        default:
            throw .usage("unknown command '\(verb)'", command: nil)
        }
    }

    // MARK: - Export and import

    /// The export passphrase: typed twice without echo, or the first line of standard input.
    private static func passphrase(confirm: Bool) throws(CommandLineError) -> Data {
        var passphrase: Data
        if Terminal.isTerminal(STDIN_FILENO) {
            passphrase = try Terminal.readHidden(prompt: "Passphrase: ")
            if confirm, try Terminal.readHidden(prompt: "Repeat the passphrase: ") != passphrase {
                throw .failure("the passphrases differ", status: .usage)
            }
        } else {
            let input = try Terminal.readSecret(limit: KeychainLimits.passwordSize)
            passphrase = input.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first
                .map { Data($0) } ?? Data()
        }
        guard !passphrase.isEmpty else { throw .usage("the passphrase is empty", command: nil) }
        return passphrase
    }

    private static func export(to path: String, force: Bool) throws(CommandLineError) {
        let matches = try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainAttributes.search([:], unlock: true, loadSecrets: true)
        }
        let locked = matches.filter { $0.secret == nil }.count
        guard locked == 0 else {
            throw .failure("\(locked) items are in a locked keyring; unlock it (secretctl unlock) and retry", status: .locked)
        }
        let items = matches.map { ExportFile.Item(label: $0.label, attributes: $0.attributes, secret: $0.secret!) }
        let sealed = try ExportFile.seal(items, passphrase: try passphrase(confirm: true))
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL)
        let file = open(path, flags, 0o600)
        guard file >= 0 else {
            throw .failure(errno == EEXIST ? "\(path) exists; use --force to overwrite it" : "cannot create \(path)", status: .usage)
        }
        defer { close(file) }
        let written = sealed.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        guard written == sealed.count else { throw .failure("cannot write \(path)", status: .failed) }
        Terminal.writeOutput("exported \(items.count) items to \(path)\n")
    }

    private static func importFile(_ path: String, replace: Bool) throws(CommandLineError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw .failure("cannot read \(path)", status: .usage) }
        var items: [ExportFile.Item]
        var skipped = 0
        if ExportFile.isExport(data) {
            items = try ExportFile.open(data, passphrase: try passphrase(confirm: false))
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

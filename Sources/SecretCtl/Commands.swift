import FoundationEssentials
import KeychainCore
import Glibc
import Keychain

/// What each verb does, once its command line is parsed.
enum Commands {
    static func run(_ verb: String, _ parsed: ParsedCommand) throws(CommandLineError) {
        let group = parsed.values["group"]
        let json = parsed.flags.contains("json")
        switch verb {
        case "generate":
            let keychain = try Common.keychain(service: parsed.arguments["SERVICE"]!, group: group)
            let account = parsed.arguments["ACCOUNT"]!
            guard let length = Int(parsed.values["length"] ?? "24"), (8...1024).contains(length) else {
                throw .usage("--length takes a number from 8 to 1024", command: "generate")
            }
            guard let alphabet = PasswordGenerator.alphabet(named: parsed.values["charset"] ?? "alnum") else {
                throw .usage("--charset is one of alnum, alpha, digits, printable", command: "generate")
            }
            let password = try PasswordGenerator.generate(length: length, alphabet: alphabet)
            let label = parsed.values["label"]
            try CommandLineError.keychain { () throws(KeychainError) in try keychain.set(password, for: account, label: label) }
            Terminal.writeOutput(password + (Terminal.isTerminal(STDOUT_FILENO) ? "\n" : ""))
        case "status":
            let owner = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.owner() }
            let collections = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.collections() }
            let command = owner.pid.flatMap { try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8) }?
                .trimmingWhitespace
            if json {
                try Output.json([
                    "provider": ["name": owner.name, "pid": owner.pid.map { Int($0) }, "command": command] as [String: Any?],
                    "collections": collections.map {
                        ["path": $0.path, "label": $0.label, "locked": $0.isLocked, "items": $0.itemCount] as [String: Any?]
                    },
                ] as [String: Any?])
            } else {
                let process = [owner.pid.map { "pid \($0)" }, command].compactMap { $0 }.joined(separator: ", ")
                Terminal.writeOutput("provider: \(owner.name)\(process.isEmpty ? "" : " (\(process))")\n")
                for collection in collections {
                    let state = collection.isLocked ? "locked" : "unlocked"
                    Terminal.writeOutput("\(collection.label)\t\(collection.path)\t\(state)\t\(collection.itemCount) items\n")
                }
            }
        case "lock":
            let alias = parsed.values["collection"] ?? KeychainCollection.default.alias
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.lock(alias: alias) }
        case "unlock":
            // No login keyring yet (a first run without PAM): create it with this password.
            let exists = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.hasKeyring() }
            if parsed.flags.contains("password-stdin") {
                var password = [UInt8](try Terminal.readSecret(limit: KeychainLimits.passwordSize, prompt: exists ? "Password: " : "New login keyring password: "))
                defer { password.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
                if password.last == UInt8(ascii: "\n") { password.removeLast() }
                let secret = password
                if exists {
                    try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.unlock(password: secret) }
                    return
                }
                guard !secret.isEmpty else { throw .usage("the password is empty; the login keyring was not created", command: verb) }
                if Terminal.isTerminal(STDIN_FILENO) {
                    var repeated = [UInt8](try Terminal.readHidden(prompt: "Repeat the password: "))
                    defer { repeated.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
                    guard repeated == secret else { throw .failure("the passwords differ; nothing was created", status: .usage) }
                }
                try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.createLoginKeyring(password: secret) }
                Terminal.writeError("secretctl: created the login keyring; it is unlocked\n")
            } else if exists {
                try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.unlock(password: nil) }
            } else {
                try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.createLoginKeyring(password: nil) }
                Terminal.writeError("secretctl: created the login keyring; it is unlocked\n")
            }
        case "passwd":
            guard parsed.flags.contains("password-stdin") else {
                try CommandLineError.keychain { () throws(KeychainError) in
                    try KeychainProvider.changePassword(current: nil, new: nil)
                }
                return
            }
            var current: [UInt8]
            var new: [UInt8]
            if Terminal.isTerminal(STDIN_FILENO) {
                current = [UInt8](try Terminal.readHidden(prompt: "Current password: "))
                new = [UInt8](try Terminal.readHidden(prompt: "New password: "))
                let repeated = [UInt8](try Terminal.readHidden(prompt: "Repeat the new password: "))
                guard repeated == new else { throw .failure("the new passwords differ; nothing changed", status: .usage) }
            } else {
                var input = [UInt8](try Terminal.readSecret(limit: 128 * 1024))
                defer { input.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
                guard let newline = input.firstIndex(of: UInt8(ascii: "\n")) else {
                    throw .usage("give the current and the new password on two lines", command: verb)
                }
                current = Array(input[..<newline])
                new = Array(input[(newline + 1)...])
                if new.last == UInt8(ascii: "\n") { new.removeLast() }
            }
            defer {
                current.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
                new.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
            }
            guard !new.isEmpty else { throw .usage("the new password is empty", command: verb) }
            let (old, fresh) = (current, new)
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainProvider.changePassword(current: old, new: fresh)
            }
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

import FoundationEssentials
import Glibc
import GnomeKeyringFormat
import Keychain
import KeychainCore

/// `secretctl import secret-service [--from NAME]`: every keyring of the provider running now
/// (gnome-keyring, KeePassXC, another secretd), read through its Secret Service, into secretd's
/// database, while that provider still owns `org.freedesktop.secrets` (see ``ImportCommand``).
///
/// secretd cannot take the name from gnome-keyring or KeePassXC (they do not allow it), so
/// secretctl runs a secretd of its own under another name (``SideSecretd``) for the import,
/// unlocks (or creates) its login keyring with the password given, and stops it at the end.
/// The provider's default keyring goes into secretd's login keyring, each other keyring into
/// one of its name; locked ones are unlocked through the provider's own prompts. Every keyring
/// is written whole or not at all, and items secretd holds already are skipped.
enum SecretServiceImport {
    static func run(from source: String?, passwordOnStandardInput: Bool) throws(CommandLineError) {
        let source = source ?? SecretServiceNames.busName
        let keyrings = try sourceKeyrings(source)
        guard passwordOnStandardInput || Terminal.isTerminal(STDIN_FILENO) else {
            throw .failure("no password for secretd's login keyring: give it on standard input with --password-stdin, or run this on a terminal", status: .usage)
        }
        let side = try SideSecretd()
        var password = try openLoginKeyring(in: side, passwordOnStandardInput: passwordOnStandardInput)
        defer { password.wipe() }
        var failures = 0
        for keyring in keyrings {
            let name = keyring.path.split(separator: "/").last.map(String.init) ?? ""
            let target = keyring.isDefault ? SecretServiceNames.loginCollection
                : SecretServiceNames.isCollectionName(name) ? name : SecretServiceNames.collectionName(fromLabel: name)
            let shown = name == target ? name : "\(name) (into \(target))"
            switch importKeyring(keyring, into: target, source: source, side: side, password: password) {
            case .success(let (imported, skipped)):
                Terminal.writeOutput("\(shown): imported \(imported), skipped \(skipped), failed 0\n")
            case .failure(let reason):
                failures += 1
                Terminal.writeError("secretctl: \(name): \(reason.text)\n")
                Terminal.writeOutput("\(shown): imported 0, skipped 0, failed \(keyring.itemCount)\n")
            }
        }
        try side.stop()
        if failures > 0 { throw .silent(status: .failed) }
        if source == SecretServiceNames.busName {
            Terminal.writeError("secretctl: secretd has them now; make it the provider with 'secretctl setup' (see secretctl(1))\n")
        }
    }

    /// The keyrings of the provider on `source`, which must be there and not be secretd on the
    /// standard name (that would be importing secretd into itself).
    private static func sourceKeyrings(_ source: String) throws(CommandLineError) -> [KeychainProvider.Collection] {
        if source != SecretServiceNames.busName, try isSecretd(on: SecretServiceNames.busName) {
            throw .failure(
                "secretd owns \(SecretServiceNames.busName) and uses its database; stop it first (the import runs a secretd of its own on that database)",
                status: .usage)
        }
        let (keyrings, isSecretd) = try CommandLineError.keychain { () throws(KeychainError) in
            do throws(KeychainError) {
                return try KeychainProvider.on(busName: source) { () throws(KeychainError) in
                    (try KeychainProvider.collections(), try KeychainProvider.isSecretd())
                }
            } catch .noProvider {
                throw .noProvider(reason: "nothing owns \(source), so there is nothing to import from")
            }
        }
        if isSecretd && source == SecretServiceNames.busName {
            throw .failure(
                "secretd itself owns \(source): there is no other provider to import from (run this while the old one runs, before 'secretctl setup')",
                status: .usage)
        }
        // The default keyring first, as it goes into secretd's login keyring; then by path.
        // The session keyring lives in memory only; it holds nothing to move.
        let wanted = keyrings.filter { $0.path != SecretServiceNames.Path.collection(SecretServiceNames.sessionCollection) }
            .sorted { ($0.isDefault ? 0 : 1, $0.path) < ($1.isDefault ? 0 : 1, $1.path) }
        guard !wanted.isEmpty else { throw .failure("the provider on \(source) has no keyrings", status: .notFound) }
        return wanted
    }

    /// Whether secretd owns `name`; false when nothing does.
    private static func isSecretd(on name: String) throws(CommandLineError) -> Bool {
        try CommandLineError.keychain { () throws(KeychainError) in
            do throws(KeychainError) {
                return try KeychainProvider.on(busName: name) { () throws(KeychainError) in try KeychainProvider.isSecretd() }
            } catch .noProvider {
                return false
            }
        }
    }

    /// secretd's login keyring, unlocked with the password given (or created with it, when
    /// secretd has none yet: then it should be the login password, which PAM unlocks it with).
    /// Returns the password, which keyrings new to secretd get too.
    private static func openLoginKeyring(in side: SideSecretd, passwordOnStandardInput: Bool) throws(CommandLineError) -> [UInt8] {
        let exists = try side.call { () throws(KeychainError) in try KeychainProvider.hasKeyring() }
        let typed = Terminal.isTerminal(STDIN_FILENO)
        for attempt in 1...3 {
            var password = [UInt8](try Terminal.readSecret(
                limit: KeychainLimits.passwordSize,
                prompt: exists ? "Password of secretd's login keyring: " : "New password of secretd's login keyring (your login password): "))
            if !typed, password.last == UInt8(ascii: "\n") { password.removeLast() }
            guard !password.isEmpty else { throw .failure("the password is empty; nothing was imported", status: .usage) }
            if exists {
                do {
                    let given = password
                    try side.call { () throws(KeychainError) in try KeychainProvider.unlock(password: given) }
                    return password
                } catch let error where error.status == .accessDenied && typed && attempt < 3 {
                    Terminal.writeError("secretctl: that is not the password of secretd's login keyring\n")
                    password.wipe()
                    continue
                } catch let error where error.status == .accessDenied {
                    throw .failure("that is not the password of secretd's login keyring; nothing was imported", status: .accessDenied)
                }
            }
            if typed {
                var repeated = [UInt8](try Terminal.readHidden(prompt: "Repeat the password: "))
                defer { repeated.wipe() }
                guard repeated == password else { throw .failure("the passwords differ; nothing was imported", status: .usage) }
            }
            let given = password
            try side.call { () throws(KeychainError) in try KeychainProvider.createLoginKeyring(password: given) }
            return password
        }
        throw .failure("that is not the password of secretd's login keyring; nothing was imported", status: .accessDenied)
    }

    /// Reads one keyring from the provider and hands it to secretd as `target`; the items
    /// written and skipped, or why nothing was.
    private static func importKeyring(
        _ keyring: KeychainProvider.Collection, into target: String, source: String, side: SideSecretd, password: [UInt8]
    ) -> Result<(Int, Int), Reason> {
        var read: ImportedKeyring
        do {
            read = try KeychainProvider.on(busName: source) { () throws(KeychainError) in try KeychainProvider.readKeyring(at: keyring.path) }
        } catch .cancelled {
            return .failure(Reason("skipped: its unlock prompt was dismissed"))
        } catch .locked {
            return .failure(Reason("skipped: it is locked, and the provider did not unlock it"))
        } catch .noPrompter(let reason) {
            return .failure(Reason("skipped: it is locked, and the provider cannot ask for its password: \(reason)"))
        } catch {
            return .failure(Reason("cannot read it: \(CommandLineError(error).detail)"))
        }
        read.name = target
        if read.label.isEmpty { read.label = target }
        // gnome-keyring's own bookkeeping: saved passwords of its other keyrings, and markers
        // of integer attributes; secretd has neither.
        read.items.removeAll { $0.attributes[GnomeKeyringFile.schemaAttribute] == GnomeKeyringImport.chainedKeyringSchema }
        for index in read.items.indices {
            read.items[index].attributes = read.items[index].attributes.filter { !$0.key.hasPrefix(GnomeKeyringFile.bookkeepingAttributePrefix) }
        }
        do {
            return .success(try side.call { () throws(KeychainError) in try KeychainProvider.importKeyring(read, password: password) })
        } catch {
            return .failure(Reason("secretd did not take it: \(error.detail)"))
        }
    }

    /// Why a keyring was not imported, as printed.
    struct Reason: Error {
        let text: String
        init(_ text: String) { self.text = text }
    }
}

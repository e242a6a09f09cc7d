import FoundationEssentials
import Glibc
import GnomeKeyringFormat
import Keychain
import KeychainCore
import SecretCrypto

/// `secretctl import gnome-keyring [DIR]`: every keyring of gnome-keyring's files, read with
/// no gnome-keyring running, into a secretd keyring of the same name (see ``ImportCommand``).
///
/// Passwords: the login keyring's comes on standard input (`--password-stdin`, one password
/// per line, the login keyring's first, then any others to try) or is typed; each keyring is
/// tried with every password given or found so far (and those that
/// gnome-keyring keeps for it, its `ChainedKeyring` items), then asked for on a terminal, or
/// skipped. A keyring without a password becomes a secretd keyring under the login
/// keyring's password, since secretd encrypts every keyring. The files are only read.
enum GnomeKeyringImport {
    /// What became of one keyring.
    enum Outcome {
        case imported(name: String, imported: Int, skipped: Int)
        case notImported(name: String, reason: String, items: Int)
    }

    /// gnome-keyring's directory: `$XDG_DATA_HOME/keyrings`, else `~/.local/share/keyrings`.
    static var defaultDirectory: String {
        if let data = getenv("XDG_DATA_HOME").map({ String(cString: $0) }), data.hasPrefix("/") { return data + "/keyrings" }
        return (getenv("HOME").map { String(cString: $0) } ?? "") + "/.local/share/keyrings"
    }

    /// The schema of the items in which gnome-keyring keeps another keyring's password.
    static let chainedKeyringSchema = "org.gnome.keyring.ChainedKeyring"

    static func run(directory: String?, passwordOnStandardInput: Bool) throws(CommandLineError) {
        let directory = directory ?? defaultDirectory
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
                .filter { $0.hasSuffix(".\(GnomeKeyringFile.fileExtension)") && !$0.hasPrefix(".") }
                .map { String($0.dropLast(GnomeKeyringFile.fileExtension.count + 1)) }
                .sorted { ($0 == "login" ? 0 : 1, $0) < ($1 == "login" ? 0 : 1, $1) }
        } catch {
            throw .failure("cannot read the directory \(directory)", status: .failed)
        }
        guard !names.isEmpty else { throw .failure("no gnome-keyring keyrings (*.keyring) in \(directory)", status: .notFound) }
        var passwords: [SecureBytes] = []
        if passwordOnStandardInput {
            passwords = try readPasswordLines()
        } else if Terminal.isTerminal(STDIN_FILENO) {
            passwords.append(try readPassword(prompt: "Password of the gnome-keyring login keyring: "))
        }
        var outcomes: [Outcome] = []
        for name in names {
            let outcome = importKeyring(name, path: "\(directory)/\(name).\(GnomeKeyringFile.fileExtension)", passwords: &passwords)
            outcomes.append(outcome)
            switch outcome {
            case .imported(let name, let imported, let skipped):
                Terminal.writeOutput("\(name): imported \(imported), skipped \(skipped), failed 0\n")
            case .notImported(let name, let reason, let items):
                Terminal.writeError("secretctl: \(name): \(reason)\n")
                Terminal.writeOutput("\(name): imported 0, skipped 0, failed \(items)\n")
            }
        }
        if outcomes.contains(where: { if case .notImported = $0 { true } else { false } }) {
            throw .silent(status: .failed)
        }
    }

    /// Reads, opens and hands over one keyring.
    private static func importKeyring(_ name: String, path: String, passwords: inout [SecureBytes]) -> Outcome {
        guard var data = FileManager.default.contents(atPath: path).map({ [UInt8]($0) }) else {
            return .notImported(name: name, reason: "cannot read \(path)", items: 0)
        }
        defer { data.wipe() }
        let keyring: GnomeKeyring
        var keyringPassword: SecureBytes?
        do {
            if GnomeKeyringFile.isEncrypted(data) {
                (keyring, keyringPassword) = try open(data, name: name, passwords: &passwords)
            } else {
                keyring = try GnomeKeyringFile.read(data, name: name, password: nil)
            }
        } catch let error as GnomeKeyringError {
            return .notImported(name: name, reason: "\(error); nothing imported from it", items: GnomeKeyringFile.itemCount(data) ?? 0)
        } catch let error as SkippedKeyring {
            return .notImported(name: name, reason: error.reason, items: GnomeKeyringFile.itemCount(data) ?? 0)
        } catch {
            return .notImported(name: name, reason: "\(error)", items: GnomeKeyringFile.itemCount(data) ?? 0)
        }
        // gnome-keyring's saved passwords of other keyrings: tried on them, not carried over.
        let chained = keyring.items.filter { $0.attributes[GnomeKeyringFile.schemaAttribute] == chainedKeyringSchema }
        for item in chained where !passwords.contains(where: { $0.constantTimeEquals(item.secret) }) { passwords.append(item.secret) }
        let items = keyring.items.filter { $0.attributes[GnomeKeyringFile.schemaAttribute] != chainedKeyringSchema }
        guard let password = keyringPassword ?? passwords.first else {
            return .notImported(
                name: name, reason: "skipped: it has no password, and secretd encrypts every keyring with one (give the login password)",
                items: items.count)
        }
        let imported = ImportedKeyring(
            name: SecretServiceNames.isCollectionName(name) ? name : SecretServiceNames.collectionName(fromLabel: name),
            label: keyring.label.isEmpty ? name : keyring.label, created: keyring.created, modified: keyring.modified,
            items: items.map { item in
                item.secret.withBytes {
                    ImportedKeyring.Item(label: item.label, attributes: item.attributes, secret: $0, created: item.created, modified: item.modified)
                }
            })
        var bytes = password.withBytes { [UInt8]($0) }
        defer { bytes.wipe() }
        do {
            let (count, skipped) = try KeychainProvider.importKeyring(imported, password: bytes)
            return .imported(name: imported.name, imported: count, skipped: skipped)
        } catch {
            return .notImported(name: name, reason: "secretd did not take it: \(CommandLineError(error).detail)", items: items.count)
        }
    }

    /// A keyring left out for want of its password.
    private struct SkippedKeyring: Error { let reason: String }

    /// Opens an encrypted keyring with the passwords known so far, then with ones typed on a
    /// terminal (three tries; an empty line skips it). A password that opens it is added.
    private static func open(_ data: [UInt8], name: String, passwords: inout [SecureBytes]) throws -> (GnomeKeyring, SecureBytes) {
        for password in passwords {
            do {
                return (try GnomeKeyringFile.read(data, name: name, password: password), password)
            } catch GnomeKeyringError.wrongPassword {
                continue
            }
        }
        guard Terminal.isTerminal(STDIN_FILENO) else {
            throw SkippedKeyring(reason: passwords.isEmpty
                ? "skipped: it is encrypted, and no password was given (--password-stdin) and no terminal can ask"
                : "skipped: the password given does not open it, and no terminal can ask for its own")
        }
        for _ in 0..<3 {
            let password = try readPassword(prompt: "Password of the gnome-keyring keyring \(name) (empty to skip it): ")
            guard password.count > 0 else { throw SkippedKeyring(reason: "skipped") }
            do {
                let keyring = try GnomeKeyringFile.read(data, name: name, password: password)
                passwords.append(password)
                return (keyring, password)
            } catch GnomeKeyringError.wrongPassword {
                Terminal.writeError("secretctl: that password does not open \(name)\n")
            }
        }
        throw SkippedKeyring(reason: "skipped after three wrong passwords")
    }

    /// A password typed without echo.
    private static func readPassword(prompt: String) throws(CommandLineError) -> SecureBytes {
        var data = try Terminal.readHidden(prompt: prompt)
        defer { data.wipe() }
        return data.withUnsafeBytes { SecureBytes(copying: $0) }
    }

    /// The passwords on standard input, one per line, the login keyring's first (typed
    /// without echo when standard input is a terminal: that one only).
    private static func readPasswordLines() throws(CommandLineError) -> [SecureBytes] {
        guard !Terminal.isTerminal(STDIN_FILENO) else { return [try readPassword(prompt: "Password of the gnome-keyring login keyring: ")] }
        var data = try Terminal.readStandardInput(limit: 64 * KeychainLimits.passwordSize, what: "the passwords")
        defer { data.wipe() }
        return data.withUnsafeBytes { bytes in
            bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).map { SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0)) }
        }
    }
}

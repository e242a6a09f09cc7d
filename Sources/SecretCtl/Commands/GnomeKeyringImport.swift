import FoundationEssentials
import Glibc
import GnomeKeyringFormat
import Keychain
import KeychainCore
import SecretCrypto

/// `secretctl import gnome-keyring [DIR]`: every keyring of gnome-keyring's files, read with
/// no gnome-keyring running, into a secretd keyring of the same name (see ``ImportCommand``).
/// `secretctl import oo7 [DIR|FILE]`: the same for oo7's keyrings (version 1 files, in
/// `keyrings/v1`), or for one version 1 file such as libsecret's file backend writes for a
/// Flatpak app (its `default` keyring goes into the login keyring). Each file is read by its
/// version byte, wherever it is.
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

    /// Whose keyrings are read.
    enum Source: String {
        /// gnome-keyring's, in `$XDG_DATA_HOME/keyrings`.
        case gnomeKeyring = "gnome-keyring"
        /// oo7's, in `$XDG_DATA_HOME/keyrings/v1`.
        case oo7

        /// Where its keyrings are: under `$XDG_DATA_HOME`, else `~/.local/share`.
        var defaultDirectory: String {
            let data: String
            if let home = getenv("XDG_DATA_HOME").map({ String(cString: $0) }), home.hasPrefix("/") {
                data = home
            } else {
                data = (getenv("HOME").map { String(cString: $0) } ?? "") + "/.local/share"
            }
            return data + (self == .oo7 ? "/keyrings/v1" : "/keyrings")
        }
    }

    /// The name of the keyring libsecret's file backend keeps (`default.keyring`), which goes
    /// into the login keyring when its file is imported on its own.
    static let fileBackendKeyring = "default"

    /// The schema of the items in which gnome-keyring keeps another keyring's password.
    static let chainedKeyringSchema = "org.gnome.keyring.ChainedKeyring"

    static func run(_ source: Source, path: String?, passwordOnStandardInput: Bool) throws(CommandLineError) {
        let path = path ?? source.defaultDirectory
        // (file path, keyring name), the login keyring first.
        var keyrings: [(path: String, name: String)]
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .failure("no \(source.rawValue) keyrings: \(path) does not exist", status: .notFound)
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            do {
                keyrings = try FileManager.default.contentsOfDirectory(atPath: path)
                    .filter { $0.hasSuffix(".\(GnomeKeyringFile.fileExtension)") && !$0.hasPrefix(".") }
                    .map { ("\(path)/\($0)", String($0.dropLast(GnomeKeyringFile.fileExtension.count + 1))) }
            } catch {
                throw .failure("cannot read the directory \(path)", status: .failed)
            }
            guard !keyrings.isEmpty else { throw .failure("no \(source.rawValue) keyrings (*.keyring) in \(path)", status: .notFound) }
        } else {
            var name = String(path.split(separator: "/").last ?? "")
            if name.hasSuffix(".\(GnomeKeyringFile.fileExtension)") { name = String(name.dropLast(GnomeKeyringFile.fileExtension.count + 1)) }
            keyrings = [(path, name == fileBackendKeyring ? "login" : name)]
        }
        keyrings.sort { ($0.name == "login" ? 0 : 1, $0.name) < ($1.name == "login" ? 0 : 1, $1.name) }
        var passwords: [SecureBytes] = []
        if passwordOnStandardInput {
            passwords = try Terminal.readPasswordLines(promptOnTerminal: "Password of the login keyring to import: ")
        } else if Terminal.isTerminal(STDIN_FILENO) {
            passwords.append(try Terminal.readPassword(prompt: "Password of the \(source.rawValue) login keyring: "))
        }
        var outcomes: [Outcome] = []
        for (file, name) in keyrings {
            let outcome = importKeyring(name, path: file, passwords: &passwords)
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
            let password = try Terminal.readPassword(prompt: "Password of the keyring \(name) (empty to skip it): ")
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
}

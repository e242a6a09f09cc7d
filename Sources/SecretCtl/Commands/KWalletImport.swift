import FoundationEssentials
import Glibc
import GnomeKeyringFormat
import Keychain
import KeychainCore
import SecretCrypto

/// `secretctl import kwallet [DIR|FILE.kwl]`: KDE's wallets, read from their files with no
/// kwalletd running (``KWalletFile``), each into a secretd keyring: `kdewallet`, KDE's default
/// wallet, into the login keyring; any other into a keyring of its name.
///
/// Entries become items as KWallet's own Secret Service bridge (ksecretd) shows them: the
/// label `FOLDER/KEY` (`KEY` alone in its folder `Secret Service`), the attributes `server`
/// (the folder), `user` (the key) and `type` (`plaintext`, `map` or `binary`), or those an
/// application gave the item through the bridge (kept in `NAME_attributes.json` beside the
/// wallet, with its content type and times). A password is its text, a map a JSON object, a
/// stream its bytes.
///
/// Passwords: on standard input (`--password-stdin`, one per line, each tried on every wallet)
/// or typed for each wallet none of those opens. A wallet the passwords do not open, or whose
/// file is damaged, is left out whole. The files are only read.
enum KWalletImport {
    /// What became of one wallet.
    enum Outcome {
        case imported(imported: Int, skipped: Int)
        case notImported(reason: String, items: Int)
    }

    /// The word that selects KWallet's wallets.
    static let word = "kwallet"
    /// KDE's default wallet, which goes into the login keyring.
    static let defaultWallet = "kdewallet"
    /// The folder of the items made through KWallet's Secret Service whose labels name none.
    static let secretServiceFolder = "Secret Service"

    /// Where KWallet keeps its wallets: `$XDG_DATA_HOME/kwalletd`, else `~/.local/share/kwalletd`.
    static var defaultDirectory: String {
        if let data = getenv("XDG_DATA_HOME").map({ String(cString: $0) }), data.hasPrefix("/") { return data + "/kwalletd" }
        return (getenv("HOME").map { String(cString: $0) } ?? "") + "/.local/share/kwalletd"
    }

    static func run(path: String?, passwordOnStandardInput: Bool) throws(CommandLineError) {
        let path = path ?? defaultDirectory
        let suffix = ".\(KWalletFile.fileExtension)"
        var files: [String]
        var info = stat()
        guard stat(path, &info) == 0 else { throw .failure("no KWallet wallets: \(path) does not exist", status: .notFound) }
        if info.st_mode & S_IFMT == S_IFDIR {
            do {
                files = try FileManager.default.contentsOfDirectory(atPath: path)
                    .filter { $0.hasSuffix(suffix) && !$0.hasPrefix(".") }.map { "\(path)/\($0)" }
            } catch {
                throw .failure("cannot read the directory \(path)", status: .failed)
            }
            guard !files.isEmpty else { throw .failure("no KWallet wallets (*.kwl) in \(path)", status: .notFound) }
        } else {
            files = [path]
        }
        // The default wallet first, then by name.
        files.sort { (walletName($0) == defaultWallet ? 0 : 1, $0) < (walletName($1) == defaultWallet ? 0 : 1, $1) }
        var passwords = passwordOnStandardInput ? try Terminal.readPasswordLines(promptOnTerminal: "Password of the KWallet wallets to import: ") : []
        var failed = false
        for file in files {
            let name = walletName(file)
            switch importWallet(file, passwords: &passwords, askedFor: passwordOnStandardInput) {
            case .imported(let imported, let skipped):
                Terminal.writeOutput("\(name): imported \(imported), skipped \(skipped), failed 0\n")
            case .notImported(let reason, let items):
                failed = true
                Terminal.writeError("secretctl: \(name): \(reason)\n")
                Terminal.writeOutput("\(name): imported 0, skipped 0, failed \(items)\n")
            }
        }
        if failed { throw .silent(status: .failed) }
    }

    /// The wallet's name: its file name without `.kwl`, KWallet's escapes (`;XX`) undone.
    static func walletName(_ path: String) -> String {
        var name = String(path.split(separator: "/").last ?? "")
        if name.hasSuffix(".\(KWalletFile.fileExtension)") { name = String(name.dropLast(KWalletFile.fileExtension.count + 1)) }
        var bytes: [UInt8] = []
        var utf8 = Array(name.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: ";"), utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads, opens and hands over one wallet.
    private static func importWallet(_ file: String, passwords: inout [SecureBytes], askedFor: Bool) -> Outcome {
        let name = walletName(file)
        let suffix = ".\(KWalletFile.fileExtension)"
        let base = file.hasSuffix(suffix) ? String(file.dropLast(suffix.count)) : file
        guard var data = FileManager.default.contents(atPath: file).map({ [UInt8]($0) }) else {
            return .notImported(reason: "cannot read \(file)", items: 0)
        }
        defer { data.wipe() }
        let items = KWalletFile.entryCount(data) ?? 0
        let salt = FileManager.default.contents(atPath: "\(base).\(KWalletFile.saltExtension)").map { [UInt8]($0) }
        let wallet: KWallet
        let password: SecureBytes
        do {
            (wallet, password) = try open(data, salt: salt, name: name, passwords: &passwords, askedFor: askedFor)
        } catch let error as KWalletError {
            return .notImported(reason: "\(error); nothing imported from it", items: items)
        } catch let error as Skipped {
            return .notImported(reason: error.reason, items: items)
        } catch {
            return .notImported(reason: "\(error)", items: items)
        }
        var info = stat()
        let fileTime = stat(file, &info) == 0 ? UInt64(max(0, info.st_mtim.tv_sec)) : 0
        let metadata = Metadata.read("\(base)_attributes.json")
        let keyring = ImportedKeyring(
            name: name == defaultWallet ? "login" : SecretServiceNames.isCollectionName(name) ? name : SecretServiceNames.collectionName(fromLabel: name),
            label: name == defaultWallet ? "Login" : name, created: metadata.created ?? fileTime, modified: metadata.modified ?? fileTime,
            items: wallet.entries.map { entry in
                let item = metadata.items["\(entry.folder)/\(entry.key)"]
                return entry.secret.withBytes {
                    ImportedKeyring.Item(
                        label: label(of: entry), attributes: item?.attributes.flatMap { $0.isEmpty ? nil : $0 } ?? attributes(of: entry),
                        secret: $0, contentType: item?.contentType ?? contentType(of: entry.type),
                        created: item?.created ?? fileTime, modified: item?.modified ?? fileTime)
                }
            })
        var bytes = password.withBytes { [UInt8]($0) }
        defer { bytes.wipe() }
        do {
            let (count, skipped) = try KeychainProvider.importKeyring(keyring, password: bytes)
            return .imported(imported: count, skipped: skipped)
        } catch {
            return .notImported(reason: "secretd did not take it: \(CommandLineError(error).detail)", items: wallet.entries.count)
        }
    }

    /// An entry's label as KWallet's Secret Service shows it: `FOLDER/KEY`, or `KEY` in the
    /// folder `Secret Service`; without the `__N_` that tells apart keys of the same label.
    static func label(of entry: KWallet.Entry) -> String {
        var key = Array(entry.key.utf8)
        // KEY__N_: N a number; ksecretd's FdoUniqueLabel::fromName.
        if key.count >= 4, key.last == UInt8(ascii: "_") {
            var index = key.count - 2
            while index >= 0, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(key[index]) { index -= 1 }
            if index < key.count - 2, index >= 1, key[index] == UInt8(ascii: "_"), key[index - 1] == UInt8(ascii: "_") {
                key.removeSubrange((index - 1)...)
            }
        }
        let name = String(decoding: key, as: UTF8.self)
        return entry.folder == secretServiceFolder ? name : "\(entry.folder)/\(name)"
    }

    /// The attributes KWallet's Secret Service gives an entry no application described.
    static func attributes(of entry: KWallet.Entry) -> [String: String] {
        let type = switch entry.type {
        case .password: "plaintext"
        case .map: "map"
        case .stream: "binary"
        }
        return ["server": entry.folder, "user": entry.key, "type": type]
    }

    /// The content type of an entry no application described.
    static func contentType(of type: KWallet.EntryType) -> String {
        switch type {
        case .password: "text/plain"
        case .map: "application/json"
        case .stream: "application/octet-stream"
        }
    }

    /// What KWallet's Secret Service keeps beside a wallet (`NAME_attributes.json`): per
    /// `FOLDER/KEY` the attributes, content type and times an application gave the item, and
    /// the collection's times.
    struct Metadata {
        struct Item {
            var attributes: [String: String]?
            var contentType: String?
            var created: UInt64?
            var modified: UInt64?
        }

        var items: [String: Item] = [:]
        var created: UInt64?
        var modified: UInt64?

        /// The file's contents; none when it is missing or not such JSON.
        static func read(_ path: String) -> Metadata {
            guard let data = FileManager.default.contents(atPath: path),
                let entries = try? JSONDecoder().decode([String: Entry].self, from: data)
            else { return Metadata() }
            var metadata = Metadata()
            for (name, entry) in entries {
                switch entry {
                case .item(let item): metadata.items[name] = item
                case .value(let value) where name == "$fdo_created": metadata.created = UInt64(value)
                case .value(let value) where name == "$fdo_modified": metadata.modified = UInt64(value)
                default: break
                }
            }
            return metadata
        }

        /// One member of the file's object: an item's object, or a text (the collection's times).
        private enum Entry: Decodable {
            case item(Item)
            case value(String)
            case other

            private struct Key: CodingKey {
                var stringValue: String
                var intValue: Int? { nil }
                init(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { nil }
            }

            init(from decoder: any Decoder) throws {
                if let object = try? decoder.container(keyedBy: Key.self) {
                    func text(_ name: String) -> String? { try? object.decodeIfPresent(String.self, forKey: Key(stringValue: name)) }
                    self = .item(Item(
                        attributes: try? object.decodeIfPresent([String: String].self, forKey: Key(stringValue: "attributes")),
                        contentType: text("$fdo_mime_type"), created: text("$fdo_created").flatMap { UInt64($0) },
                        modified: text("$fdo_modified").flatMap { UInt64($0) }))
                } else if let value = try? decoder.singleValueContainer().decode(String.self) {
                    self = .value(value)
                } else {
                    self = .other
                }
            }
        }
    }

    /// A wallet left out for want of its password.
    private struct Skipped: Error { let reason: String }

    /// Opens a wallet with the passwords known so far, then with ones typed on a terminal
    /// (three tries; an empty line skips it). A password that opens it is added.
    private static func open(
        _ data: [UInt8], salt: [UInt8]?, name: String, passwords: inout [SecureBytes], askedFor: Bool
    ) throws -> (KWallet, SecureBytes) {
        for password in passwords {
            do {
                return (try KWalletFile.read(data, salt: salt, password: password), password)
            } catch KWalletError.wrongPassword {
                continue
            }
        }
        if askedFor { throw KWalletError.wrongPassword }
        guard Terminal.isTerminal(STDIN_FILENO) else {
            throw Skipped(reason: "skipped: no password was given (--password-stdin) and no terminal can ask for it")
        }
        for _ in 0..<3 {
            let password = try Terminal.readPassword(prompt: "Password of the KWallet wallet \(name) (empty to skip it): ")
            guard password.count > 0 else { throw Skipped(reason: "skipped") }
            do {
                let wallet = try KWalletFile.read(data, salt: salt, password: password)
                passwords.append(password)
                return (wallet, password)
            } catch KWalletError.wrongPassword {
                Terminal.writeError("secretctl: wrong password for \(name)\n")
            }
        }
        throw Skipped(reason: "skipped after three wrong passwords")
    }
}

import Keychain
import KeychainCore

/// What several verbs share: the SERVICE and ACCOUNT arguments, attribute pairs, `--group` and
/// `--json`, and the small steps around them. Declared once, so the verbs' help cannot drift
/// apart.
enum Common {
    /// `SERVICE`, the first half of an item's name.
    static let service = Positional<String>("SERVICE", help: "The service, e.g. com.example.mail.")
    /// `ACCOUNT`, the second half of an item's name.
    static let account = Positional<String>("ACCOUNT", help: "The account, e.g. alice@example.com.")
    /// `ATTRIBUTE VALUE ...`, the attributes of the secret-tool compatible verbs.
    static let pairs = Positional<[String]>("ATTRIBUTE VALUE", help: "Attribute names and values, in pairs.")
    /// `--label`, what keyring managers show for an item `set` or `generate` writes.
    static let label = LongOption<String?>("label", value: "TEXT", help: "The label keyring managers show.")
    /// `--group`, the access group an item is read from or written to.
    static let group = LongOption<String?>("group", value: "GROUP", help: "Use this access group.")
    /// `--accessible CLASS`, the accessibility class an item is written with.
    static let accessible = LongOption<String?>(
        "accessible", value: "CLASS",
        help: "When the item can be read: \(ItemAccessibility.names) (default: when-unlocked, or the access group's).")
    /// `--json`, for output a program reads.
    static let json = LongOption<Bool>("json", help: "Print JSON (keys are documented in secretctl(1)).")

    /// The keychain of `service` (in `group`, and writing the class `accessibility`, when
    /// given); the library checks the names.
    static func keychain(
        service: String, group: String?, accessibility: KeychainAccessibility? = nil
    ) throws(CommandLineError) -> Keychain {
        try CommandLineError.keychain { () throws(KeychainError) in
            try Keychain(service: service, accessGroup: group, accessibility: accessibility)
        }
    }

    /// Checks that `text` is a caller identity as secretd names them; a usage error of `verb`
    /// otherwise.
    static func checkIdentity(_ text: String, verb: String) throws(CommandLineError) {
        guard CallerIdentity(parsing: text) == nil else { return }
        throw .usage("'\(text)' is not an identity: flatpak:APP-ID, snap:NAME, unit:NAME.service or exe:/PATH "
                     + "(secretctl whoami prints a program's own)", command: verb)
    }

    /// The login password from the terminal (no echo) or standard input when `wanted`
    /// (`--password-stdin`), else nil: secretd then asks the person itself. Wipe it after use.
    static func loginPassword(if wanted: Bool) throws(CommandLineError) -> [UInt8]? {
        wanted ? try Terminal.readSecretLine(limit: KeychainLimits.passwordSize, prompt: "Login password: ") : nil
    }

    /// The class `--accessible` names, if given; a usage error of `verb` for an unknown one.
    static func accessibility(_ parsed: ParsedCommand, verb: String) throws(CommandLineError) -> KeychainAccessibility? {
        guard let name = parsed[accessible] else { return nil }
        guard let accessibility = KeychainAccessibility(name: name) else {
            throw .usage("--accessible takes one of \(ItemAccessibility.names)", command: verb)
        }
        return accessibility
    }

    /// The error for an item that is not there: exit status 1, naming it.
    static func notFound(service: String, account: String) -> CommandLineError {
        .failure("no secret for service '\(service)', account '\(account)'", status: .notFound)
    }

    /// `ATTRIBUTE VALUE` pairs as a dictionary; a usage error of `verb` when they are not pairs.
    static func attributes(fromPairs words: [String], verb: String) throws(CommandLineError) -> [String: String] {
        guard !words.isEmpty, words.count % 2 == 0 else {
            throw .usage("attributes come in pairs: ATTRIBUTE VALUE ...", command: verb)
        }
        var result: [String: String] = [:]
        for index in stride(from: 0, to: words.count, by: 2) { result[words[index]] = words[index + 1] }
        return result
    }
}

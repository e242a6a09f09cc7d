import FoundationEssentials
import Glibc
import Keychain

/// `secretctl git-credential get|store|erase`: git's credential helper. The protocol (the
/// request, the attributes, the stored secret, the reply) is ``GitCredential``'s; this is the
/// keychain side.
enum GitCredentialCommand: Verb {
    /// `ACTION`, as git passes it.
    static let action = Positional<String>("ACTION", help: "get, store or erase, as git passes it.")

    static let spec = CommandSpec(
        name: "git-credential", abstract: "Be git's credential helper (get, store, erase on standard input).",
        arguments: [action], options: [],
        examples: ["git config --global credential.helper '!secretctl git-credential'"])

    /// Runs one helper action with git's `key=value` request on standard input. Nothing found
    /// is no output and status 0: git then asks the next helper, or the user.
    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let action = parsed[Self.action]
        var input = try Terminal.readStandardInput(limit: 1 << 20, what: "the credential request")
        defer { input.wipe() }
        let request = GitCredential.parse(String(decoding: input, as: UTF8.self))
        guard !GitCredential.isQuit(request), let attributes = GitCredential.attributes(for: request) else { return }

        switch action {
        case "get":
            let found = try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.search(attributes, unlock: true, loadSecrets: true)
            }
            // The newest credential that has not expired (git drops expired ones; git 2.39 would not).
            let now = Int(Date().timeIntervalSince1970)
            let credentials = found.compactMap { match in match.secret.map { (match, StoredSecret(decoding: $0)) } }
            guard let (match, stored) = credentials.first(where: { !$0.1.isExpired(at: now) }) else { return }
            Terminal.writeOutput(GitCredential.reply(to: request, storedUser: match.attributes["user"], stored: stored))
        case "store":
            guard let item = GitCredential.itemToStore(for: request) else { return }
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.store(item.attributes, label: item.label, secret: item.secret.encoded, collection: nil)
            }
        case "erase":
            // Erase only what git rejected: when it names the password, items holding another
            // secret (stored meanwhile) stay.
            let found = try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainAttributes.search(attributes, unlock: true, loadSecrets: true)
            }
            for match in found
            where request["password"] == nil || match.secret.map({ StoredSecret(decoding: $0).password }) == request["password"] {
                _ = try CommandLineError.keychain { () throws(KeychainError) in try KeychainAttributes.clear(match.attributes) }
            }
        default:
            throw .usage("git-credential takes get, store or erase", command: spec.name)
        }
    }
}

import Keychain

/// `secretctl lock [--collection ALIAS | --all]`: locks the default keyring, another, or every
/// keyring with its after-first-unlock items.
enum LockCommand: Verb {
    /// `--collection ALIAS`, as `secret-tool lock --collection`.
    static let collection = LongOption<String?>("collection", value: "ALIAS", help: "Lock the keyring with this alias instead.")
    /// `--all`: every keyring, and the after-first-unlock items an ordinary lock leaves readable.
    static let all = LongOption<Bool>(
        "all", help: "Lock every keyring, after-first-unlock items too, until a password or PIN opens them (secretd).")

    static let spec = CommandSpec(
        name: "lock", abstract: "Lock the default keyring (or another, as secret-tool lock --collection; or all of them).",
        arguments: [], options: [collection, all],
        examples: ["secretctl lock", "secretctl lock --collection session", "secretctl lock --all"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        if parsed[Self.all] {
            guard parsed[Self.collection] == nil else {
                throw .usage("--all locks every keyring; it takes no --collection", command: spec.name)
            }
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.lockAll() }
            return
        }
        let alias = parsed[Self.collection] ?? KeychainCollection.default.alias
        try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.lock(alias: alias) }
    }
}

import Keychain

/// `secretctl lock [--collection ALIAS]`: locks the default keyring, or another.
enum LockCommand: Verb {
    /// `--collection ALIAS`, as `secret-tool lock --collection`.
    static let collection = LongOption<String?>("collection", value: "ALIAS", help: "Lock the keyring with this alias instead.")

    static let spec = CommandSpec(
        name: "lock", abstract: "Lock the default keyring (or another, as secret-tool lock --collection).",
        arguments: [], options: [collection], examples: ["secretctl lock", "secretctl lock --collection session"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let alias = parsed[Self.collection] ?? KeychainCollection.default.alias
        try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.lock(alias: alias) }
    }
}

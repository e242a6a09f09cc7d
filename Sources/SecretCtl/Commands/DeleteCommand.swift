import Keychain

/// `secretctl delete SERVICE ACCOUNT`: deletes an item; exit status 1 when there is none.
enum DeleteCommand: Verb {
    static let spec = CommandSpec(
        name: "delete", abstract: "Delete a secret.", arguments: [Common.service, Common.account], options: [Common.group],
        examples: ["secretctl delete com.example.mail alice"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let keychain = try Common.keychain(service: parsed[Common.service], group: parsed[Common.group])
        let account = parsed[Common.account]
        let removed = try CommandLineError.keychain { () throws(KeychainError) in try keychain.removeValue(for: account) }
        if !removed { throw Common.notFound(service: keychain.service, account: account) }
    }
}

import Keychain

/// `secretctl list [SERVICE]`: the accounts of one service, or of every service; no secrets.
enum ListCommand: Verb {
    /// `SERVICE`, optional here: without it every service is listed.
    static let service = Positional<String?>("SERVICE", help: "Only this service.")

    static let spec = CommandSpec(
        name: "list", abstract: "List the accounts of one service, or of all (no secrets).",
        arguments: [service], options: [Common.group, Common.json],
        examples: ["secretctl list", "secretctl list --json com.example.mail"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let group = parsed[Common.group]
        let items: [KeychainItem]
        if let service = parsed[Self.service] {
            let keychain = try Common.keychain(service: service, group: group)
            items = try CommandLineError.keychain { () throws(KeychainError) in try keychain.allAccounts() }
        } else {
            items = try CommandLineError.keychain { () throws(KeychainError) in try Keychain.allAccounts() }
                .filter { group == nil || $0.accessGroup == group }
        }
        try Output.items(items, json: parsed[Common.json])
    }
}

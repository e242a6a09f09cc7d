import Keychain

/// `secretctl list [SERVICE]`: the accounts of one service, or of every service; no secrets.
/// Generic passwords and internet passwords both, an internet password's server as its service.
enum ListCommand: Verb {
    /// `SERVICE`, optional here: without it every service is listed.
    static let service = Positional<String?>("SERVICE", help: "Only this service (or an internet password's server).")

    static let spec = CommandSpec(
        name: "list", abstract: "List the accounts of one service, or of all: generic and internet passwords (no secrets).",
        arguments: [service], options: [Common.group, Common.json],
        examples: ["secretctl list", "secretctl list --json com.example.mail"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let group = parsed[Common.group]
        let json = parsed[Common.json]
        let printed: [Output.Printed<Output.ListOrder>]
        if let service = parsed[Self.service] {
            let keychain = try Common.keychain(service: service, group: group)
            printed = try Output.printed(
                CommandLineError.keychain { () throws(KeychainError) in
                    try keychain.allAccounts() + InternetKeychain(server: service, accessGroup: group).allAccounts()
                }, json: json)
        } else {
            printed = try Output.allPrinted(json: json) { group == nil || $0.accessGroup == group }
        }
        Output.write(printed, json: json)
    }
}

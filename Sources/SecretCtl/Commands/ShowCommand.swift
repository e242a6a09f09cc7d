import Keychain

/// `secretctl show SERVICE ACCOUNT`: an item's label, comment, group, class and dates; the secret
/// only with `--reveal`.
enum ShowCommand: Verb {
    /// `--reveal`: print the secret too.
    static let reveal = LongOption<Bool>("reveal", help: "Also print the secret.")

    static let spec = CommandSpec(
        name: "show", abstract: "Show an item's label, comment, group, class and dates (the secret with --reveal).",
        arguments: [Common.service, Common.account], options: [Common.group, Common.json, reveal],
        examples: ["secretctl show com.example.mail alice"])

    /// The order of the fields in the text output (JSON has its keys sorted).
    private static let fieldOrder = ["service", "account", "label", "comment", "group", "accessible", "created", "modified", "secret"]

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let keychain = try Common.keychain(service: parsed[Common.service], group: parsed[Common.group])
        let account = parsed[Common.account]
        guard let item = try CommandLineError.keychain({ () throws(KeychainError) in try keychain.attributes(for: account) })
        else { throw Common.notFound(service: keychain.service, account: account) }
        var fields = Output.describe(item)
        if parsed[Self.reveal] {
            let secret = try CommandLineError.keychain { () throws(KeychainError) in try keychain.data(for: account) }
            fields["secret"] = secret.map(Output.jsonSecret)
        }
        if parsed[Common.json] {
            try Output.json(fields)
        } else {
            for key in fieldOrder {
                guard let value = fields[key], let text = value.flatMap({ $0 as? String }) else { continue }
                Terminal.writeOutput("\(key): \(text)\n")
            }
        }
    }
}

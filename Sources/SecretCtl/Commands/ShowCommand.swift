import Keychain

/// `secretctl show SERVICE ACCOUNT`: an item's label, comment, group, class and dates; the secret
/// only with `--reveal` (a generic password, else an internet password of server SERVICE:
/// ``PasswordAddress``).
enum ShowCommand: Verb {
    /// `--reveal`: print the secret too.
    static let reveal = LongOption<Bool>("reveal", help: "Also print the secret.")

    static let spec = CommandSpec(
        name: "show", abstract: "Show an item's label, comment, group, class, kind and dates (the secret with --reveal); found as get finds it.",
        arguments: [Common.service, Common.account], options: [Common.group, Common.json, reveal],
        examples: ["secretctl show com.example.mail alice"])

    /// The order of the fields in the text output (JSON has its keys sorted).
    private static let fieldOrder = ["service", "account", "kind", "url", "label", "comment", "group", "accessible", "created", "modified", "secret"]

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let address = try PasswordAddress(service: parsed[Common.service], account: parsed[Common.account], group: parsed[Common.group])
        guard let item = try address.item() else { throw address.notFound }
        var fields = Output.describe(item)
        if parsed[Self.reveal] { fields["secret"] = try address.data().map(Output.jsonSecret) }
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

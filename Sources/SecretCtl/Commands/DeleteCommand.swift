import Keychain

/// `secretctl delete SERVICE ACCOUNT`: deletes an item (a generic password, else an internet
/// password of server SERVICE: ``PasswordAddress``); exit status 1 when there is none.
enum DeleteCommand: Verb {
    static let spec = CommandSpec(
        name: "delete", abstract: "Delete a secret: SERVICE's generic password, else server SERVICE's internet password.", arguments: [Common.service, Common.account], options: [Common.group],
        examples: ["secretctl delete com.example.mail alice"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let address = try PasswordAddress(service: parsed[Common.service], account: parsed[Common.account], group: parsed[Common.group])
        if try !address.remove() { throw address.notFound }
    }
}

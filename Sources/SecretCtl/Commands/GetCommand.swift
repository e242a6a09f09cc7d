import Keychain
import KeychainCore

/// `secretctl get SERVICE ACCOUNT`: prints a secret, byte for byte (a generic password, else an
/// internet password of server SERVICE: ``PasswordAddress``).
enum GetCommand: Verb {
    static let spec = CommandSpec(
        name: "get", abstract: "Print a secret: SERVICE's generic password, else server SERVICE's internet password (a newline follows only on a terminal).",
        arguments: [Common.service, Common.account], options: [Common.group, Common.json],
        examples: ["secretctl get com.example.mail alice", "secretctl get --json com.example.mail alice"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let address = try PasswordAddress(service: parsed[Common.service], account: parsed[Common.account], group: parsed[Common.group])
        guard let secret = try address.data() else { throw address.notFound }
        if parsed[Common.json] {
            try Output.json(["service": address.service, "account": address.account, "secret": Output.jsonSecret(secret)])
        } else {
            Output.secret(secret)
        }
    }
}

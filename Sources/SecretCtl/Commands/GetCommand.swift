import Keychain
import KeychainCore

/// `secretctl get SERVICE ACCOUNT`: prints a secret, byte for byte.
enum GetCommand: Verb {
    static let spec = CommandSpec(
        name: "get", abstract: "Print a secret (a newline follows only on a terminal).",
        arguments: [Common.service, Common.account], options: [Common.group, Common.json],
        examples: ["secretctl get com.example.mail alice", "secretctl get --json com.example.mail alice"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let keychain = try Common.keychain(service: parsed[Common.service], group: parsed[Common.group])
        let account = parsed[Common.account]
        guard let secret = try CommandLineError.keychain({ () throws(KeychainError) in try keychain.data(for: account) })
        else { throw Common.notFound(service: keychain.service, account: account) }
        if parsed[Common.json] {
            try Output.json(["service": keychain.service, "account": account, "secret": Output.jsonSecret(secret)])
        } else {
            Output.secret(secret)
        }
    }
}

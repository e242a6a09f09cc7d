import FoundationEssentials
import Glibc
import Keychain
import KeychainCore

/// `secretctl set SERVICE ACCOUNT`: stores a secret typed without echo, or read from standard
/// input; never one given on the command line.
enum SetCommand: Verb {
    /// `--comment`: stored as an unencrypted attribute.
    static let comment = LongOption<String?>("comment", value: "TEXT", help: "A comment stored with the item (not encrypted).")

    static let spec = CommandSpec(
        name: "set", abstract: "Store a secret (typed without echo, or read from standard input).",
        arguments: [Common.service, Common.account], options: [Common.label, comment, Common.group, Common.accessible],
        examples: [
            "secretctl set com.example.mail alice          # asks for the secret",
            "printf %s \"$TOKEN\" | secretctl set ci.deploy bot   # from a script",
            "secretctl set --accessible after-first-unlock com.example.sync token   # readable behind the screen lock",
        ])

    /// Parses as ``spec`` says; a third argument is most likely the secret itself, so the error
    /// says why that is refused and what to do instead.
    static func parse(_ words: [String]) throws(CommandLineError) -> ParsedCommand {
        do {
            return try ParsedCommand.parse(words, for: spec)
        } catch .usage("too many arguments", _) {
            throw .usage(
                "a secret on the command line is visible to other users (ps, shell history); pipe it instead: "
                    + "printf %s \"$SECRET\" | secretctl set SERVICE ACCOUNT", command: spec.name)
        }
    }

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let keychain = try Common.keychain(
            service: parsed[Common.service], group: parsed[Common.group],
            accessibility: try Common.accessibility(parsed, verb: spec.name))
        let account = parsed[Common.account]
        var secret = try Terminal.readSecret(limit: Keychain.maximumValueSize)
        defer { secret.wipe() }
        let label = parsed[Common.label]
        let comment = parsed[Self.comment]
        try CommandLineError.keychain { () throws(KeychainError) in
            // Text stays text (content type text/plain); other bytes are stored as they are.
            if let text = String(data: secret, encoding: .utf8) {
                try keychain.set(text, for: account, label: label, comment: comment)
            } else {
                try keychain.set(secret, for: account, label: label, comment: comment)
            }
        }
    }
}

import FoundationEssentials
import Keychain

/// `secretctl generate SERVICE ACCOUNT`: stores a new random password and prints it.
enum GenerateCommand: Verb {
    /// `--length N`, 8 to 1024 characters.
    static let length = LongOption<String?>("length", value: "N", help: "How many characters (default 24, 8 to 1024).")
    /// `--charset SET`, one of ``PasswordGenerator/alphabet(named:)``'s names.
    static let charset = LongOption<String?>(
        "charset", value: "SET", help: "alnum (default), alpha, digits, or printable (with symbols).")

    static let spec = CommandSpec(
        name: "generate", abstract: "Store a new random password and print it.",
        arguments: [Common.service, Common.account], options: [length, charset, Common.label, Common.group],
        examples: ["secretctl generate --length 32 db.example.com admin"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let keychain = try Common.keychain(service: parsed[Common.service], group: parsed[Common.group])
        let account = parsed[Common.account]
        guard let length = Int(parsed[Self.length] ?? "24"), (8...1024).contains(length) else {
            throw .usage("--length takes a number from 8 to 1024", command: spec.name)
        }
        guard let alphabet = PasswordGenerator.alphabet(named: parsed[Self.charset] ?? "alnum") else {
            throw .usage("--charset is one of alnum, alpha, digits, printable", command: spec.name)
        }
        let password = try PasswordGenerator.generate(length: length, alphabet: alphabet)
        let label = parsed[Common.label]
        try CommandLineError.keychain { () throws(KeychainError) in try keychain.set(password, for: account, label: label) }
        Output.secret(Data(password.utf8))
    }
}

import Keychain

/// `secretctl whoami`: how secretd identifies this process, and its access groups.
enum WhoamiCommand: Verb {
    static let spec = CommandSpec(
        name: "whoami", abstract: "Show how secretd identifies this process, and its access groups.",
        arguments: [], options: [Common.json], examples: ["secretctl whoami", "secretctl whoami --json"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let me = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.whoAmI() }
        if parsed[Common.json] {
            try Output.json([
                "identity": me.identity, "groups": me.groups, "default_group": me.defaultGroup, "confined": me.confined,
            ])
        } else {
            Terminal.writeOutput("""
                identity:      \(me.identity)
                groups:        \(me.groups.joined(separator: ", "))
                default group: \(me.defaultGroup)\(me.confined ? " (confined to its groups)" : "")

                """)
        }
    }
}

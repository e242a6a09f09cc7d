import Keychain
import KeychainCore

/// `secretctl lookup ATTRIBUTE VALUE ...`: as `secret-tool lookup`, the newest secret with
/// these attributes.
enum LookupCommand: Verb {
    static let spec = CommandSpec(
        name: "lookup", abstract: "As secret-tool lookup: print the newest secret with these attributes.",
        arguments: [Common.pairs], options: [Common.json], examples: ["secretctl lookup service imap user alice"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let attributes = try Common.attributes(fromPairs: parsed[Common.pairs], verb: spec.name)
        let found = try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainAttributes.search(attributes, unlock: true, loadSecrets: true)
        }
        // Like secret-tool: nothing found is exit status 1 without a message.
        guard let match = found.first, let secret = match.secret else { throw .silent(status: .notFound) }
        if parsed[Common.json] {
            try Output.json(Output.describe(match, includingSecret: true))
        } else {
            Output.secret(secret)
        }
    }
}

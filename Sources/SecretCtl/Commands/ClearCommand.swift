import Keychain
import KeychainCore

/// `secretctl clear ATTRIBUTE VALUE ...`: as `secret-tool clear`, deletes every item with
/// these attributes.
enum ClearCommand: Verb {
    static let spec = CommandSpec(
        name: "clear", abstract: "As secret-tool clear: delete every item with these attributes.",
        arguments: [Common.pairs], options: [], examples: ["secretctl clear service imap user alice"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let attributes = try Common.attributes(fromPairs: parsed[Common.pairs], verb: spec.name)
        let removed = try CommandLineError.keychain { () throws(KeychainError) in try KeychainAttributes.clear(attributes) }
        if removed == 0 { throw .silent(status: .notFound) }  // as secret-tool: no message
    }
}

import FoundationEssentials
import Glibc
import Keychain

/// `secretctl store --label TEXT ATTRIBUTE VALUE ...`: as `secret-tool store`, a secret under
/// exactly these attributes.
enum StoreCommand: Verb {
    /// `--label`, required as with secret-tool (the parser has no required options, so `run`
    /// checks it).
    static let label = LongOption<String?>("label", value: "TEXT", help: "The label (required, as with secret-tool).")
    /// `--collection ALIAS`: another keyring than the default one.
    static let collection = LongOption<String?>(
        "collection", value: "ALIAS", help: "The keyring to store in (default: the default keyring).")

    static let spec = CommandSpec(
        name: "store", abstract: "As secret-tool store: store a secret under exactly these attributes.",
        arguments: [Common.pairs], options: [label, collection, Common.accessible],
        examples: ["printf %s \"$PW\" | secretctl store --label=\"Mail\" service imap user alice"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        guard let label = parsed[Self.label] else { throw .usage("--label is required", command: spec.name) }
        var attributes = try Common.attributes(fromPairs: parsed[Common.pairs], verb: spec.name)
        if let accessibility = try Common.accessibility(parsed, verb: spec.name) {
            attributes[KeychainAttributeName.accessibility] = accessibility.name
        }
        var secret = try Terminal.readSecret(limit: Keychain.maximumValueSize)
        defer { secret.wipe() }
        let value = secret
        let collection = parsed[Self.collection]
        try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainAttributes.store(attributes, label: label, secret: value, collection: collection)
        }
    }
}

import KeychainCore
import FoundationEssentials
import Keychain

/// `secretctl history SERVICE ACCOUNT [--restore N]`: the versions of a synced item that lost a
/// merge (edited on two machines at once, or replaced by a newer one), so none disappears
/// silently; `--restore` makes one the item's contents again. Secrets stay inside secretd.
enum HistoryCommand: Verb {
    /// `--restore N`: make version N the item's contents again.
    static let restore = LongOption<String?>("restore", value: "N", help: "Make version N (as listed) the item's contents again; it syncs.")
    /// `--collection NAME`: another keyring than the login keyring.
    static let collection = LongOption<String?>("collection", value: "NAME", help: "The item is in this keyring instead of the login keyring.")

    static let spec = CommandSpec(
        name: "history", abstract: "List the earlier versions of a synced item, or restore one (secretd).",
        arguments: [Common.service, Common.account], options: [collection, restore, Common.json],
        examples: ["secretctl history com.example.mail alice", "secretctl history com.example.mail alice --restore 3"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let keyring = parsed[Self.collection] ?? SecretServiceNames.loginCollection
        let attributes = ["service": parsed[Common.service], "account": parsed[Common.account]]
        if let text = parsed[Self.restore] {
            guard let version = UInt64(text) else { throw .usage("--restore takes a version number, as history lists them", command: spec.name) }
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainProvider.restoreSyncVersion(version, keyring: keyring, attributes: attributes)
            }
            Terminal.writeError("secretctl: restored version \(version)\n")
            return
        }
        let versions = try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainProvider.syncHistory(keyring: keyring, attributes: attributes)
        }
        func when(_ version: KeychainProvider.SyncVersion) -> String {
            Date(timeIntervalSince1970: Double(version.madeAt) / 1000).formatted(.iso8601)
        }
        if parsed[Common.json] {
            try Output.json(versions.map { version -> [String: Any?] in
                ["version": Int(clamping: version.id), "made": version.madeAt == 0 ? nil : when(version), "device": version.device,
                 "deleted": version.deleted, "label": version.deleted ? nil : version.label]
            })
            return
        }
        if versions.isEmpty { Terminal.writeError("secretctl: no earlier versions\n") }
        for version in versions {
            let made = version.madeAt == 0 ? "before sync" : when(version)
            Terminal.writeOutput("\(version.id)\t\(made)\t\(version.device)\t\(version.deleted ? "(deleted)" : version.label)\n")
        }
    }
}

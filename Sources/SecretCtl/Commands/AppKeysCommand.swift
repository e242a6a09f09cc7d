import KeychainCore
import FoundationEssentials
import Glibc
import Keychain

/// `secretctl app-keys [list | delete APP-ID]`: the keys secretd gives sandboxed apps through
/// the desktop portal. Listed by app (never their bytes); deleting one makes everything that
/// app stored unreadable, so it needs `--yes` or a typed confirmation.
enum AppKeysCommand: Verb {
    /// `ACTION`: list (the default) or delete.
    static let action = Positional<String?>("ACTION", help: "list (the default) or delete.")
    /// `APP-ID`, for `delete`.
    static let app = Positional<String?>("APP-ID", help: "The Flatpak app id (for delete).")
    /// `--yes`: delete without asking.
    static let yes = LongOption<Bool>("yes", help: "Delete without asking for confirmation.")

    static let spec = CommandSpec(
        name: "app-keys", abstract: "List or delete the keys sandboxed apps get through the desktop portal.",
        arguments: [action, app], options: [Common.json, yes],
        examples: ["secretctl app-keys", "secretctl app-keys delete --yes org.example.App"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        switch parsed[Self.action] ?? "list" {
        case "list":
            guard parsed[Self.app] == nil else { throw .usage("app-keys list takes no APP-ID", command: spec.name) }
            let keys = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.appKeys() }
            if parsed[Common.json] {
                try Output.json(keys.map { key -> [String: Any] in
                    ["app": key.app, "keyring": key.keyring,
                     "created": Date(timeIntervalSince1970: Double(key.created)).formatted(.iso8601)]
                })
                return
            }
            if keys.isEmpty { Terminal.writeOutput("no app keys: no sandboxed app has asked the portal for one\n") }
            for key in keys {
                Terminal.writeOutput(
                    "\(key.app)\t\(key.keyring)\t\(Date(timeIntervalSince1970: Double(key.created)).formatted(.iso8601))\n")
            }
        case "delete":
            guard let app = parsed[Self.app] else { throw .usage("app-keys delete takes an APP-ID", command: spec.name) }
            guard PortalNames.isAppID(app) else { throw .usage("'\(app)' is not a Flatpak app id", command: spec.name) }
            let warning = "deleting the key of \(app) makes every secret it stored (in ~/.var/app/\(app)/data/keyrings) "
                + "unreadable; the app gets a new, empty keyring"
            if !parsed[Self.yes] {
                guard Terminal.isTerminal(STDIN_FILENO) else {
                    throw .failure("\(warning). Give --yes to delete it.", status: .usage)
                }
                Terminal.writeError("\(warning).\nType the app id to delete its key: ")
                guard readLine(strippingNewline: true)?.trimmingWhitespace == app else {
                    throw .failure("not deleted", status: .failed)
                }
            } else {
                Terminal.writeError("warning: \(warning)\n")
            }
            let deleted = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.deleteAppKey(app) }
            guard deleted else { throw .failure("\(app) has no app key", status: .notFound) }
        case let other:
            throw .usage("unknown app-keys action '\(other)' (list, delete)", command: spec.name)
        }
    }
}

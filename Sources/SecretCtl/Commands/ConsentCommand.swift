import KeychainCore
import FoundationEssentials
import Keychain

/// `secretctl consent ACTION [IDENTITY GROUP]`: consent for new readers (secretd(1), CONSENT):
/// the programs the person always allowed to read a group's secrets, listed, allowed ahead
/// (with the login password, or through secretd's prompt) and forgotten.
enum ConsentCommand: Verb {
    /// `ACTION`: what to do.
    static let action = Positional<String>("ACTION", help: "list, allow or revoke.")
    /// `IDENTITY`, for `allow` and `revoke`.
    static let identity = Positional<String?>(
        "IDENTITY", help: "flatpak:ID, snap:NAME, unit:NAME or exe:/PATH, as secretctl whoami and secretd's refusals name it.")
    /// `GROUP`, for `allow` and `revoke`.
    static let group = Positional<String?>("GROUP", help: "The access group (default for items in no group).")
    /// `--password-stdin`: the login password instead of secretd's prompt.
    static let passwordStdin = LongOption<Bool>(
        "password-stdin",
        help: "Confirm allow with the login password (typed without echo, or on standard input) instead of secretd's prompt.")

    static let spec = CommandSpec(
        name: "consent", abstract: "List, allow and revoke the programs that may read a group's secrets without asking (secretd).",
        arguments: [action, identity, group], options: [Common.json, passwordStdin],
        examples: [
            "secretctl consent list",
            "secretctl consent allow exe:/usr/bin/secret-tool default",
            "secretctl consent allow --password-stdin unit:backup.service com.example.deploy < pw",
            "secretctl consent revoke exe:/usr/bin/python3.11 default",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let action = parsed[Self.action]
        let identity = parsed[Self.identity]
        let group = parsed[Self.group]
        switch action {
        case "list":
            guard identity == nil else { throw .usage("consent list takes no IDENTITY or GROUP", command: spec.name) }
            let state = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.readerConsents() }
            if parsed[Common.json] {
                try Output.json([
                    "consent": state.defaultMode, "asking_groups": state.askingGroups,
                    "allowed": state.consents.map { consent -> [String: Any?] in
                        [
                            "identity": consent.identity, "group": consent.group, "executable_sha256": consent.executableDigest,
                            "allowed": Date(timeIntervalSince1970: Double(consent.granted)).formatted(.iso8601),
                        ]
                    },
                ])
                return
            }
            Terminal.writeOutput(
                state.askingGroups.isEmpty
                    ? "consent = \(state.defaultMode): no group asks before a new reader's first read\n"
                    : "consent = \(state.defaultMode): new readers are asked in \(state.askingGroups.joined(separator: ", "))\n")
            for consent in state.consents {
                let binding = consent.executableDigest.map { "executable sha256 \($0.prefix(16))…" } ?? "any executable"
                Terminal.writeOutput(
                    "\(consent.identity)\t\(consent.group)\tsince \(Date(timeIntervalSince1970: Double(consent.granted)).formatted(.iso8601))"
                        + "\t\(binding)\n")
            }
        case "allow", "revoke":
            guard let identity, let group else { throw .usage("consent \(action) takes IDENTITY and GROUP", command: spec.name) }
            try Common.checkIdentity(identity, verb: spec.name)
            guard group == AccessGroupNames.defaultGroup || AccessGroupNames.isGroupName(group) else {
                throw .usage("'\(group)' is not a group name (default, or letters, digits, '.', '-', '_')", command: spec.name)
            }
            if action == "revoke" {
                let removed = try CommandLineError.keychain { () throws(KeychainError) in
                    try KeychainProvider.revokeReader(identity: identity, group: group)
                }
                guard removed else { throw .failure("\(identity) had no consent to read \(group)", status: .notFound) }
                return
            }
            var password = try Common.loginPassword(if: parsed[Self.passwordStdin])
            defer { password?.wipe() }
            let secret = password
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainProvider.allowReader(identity: identity, group: group, password: secret)
            }
        default:
            throw .usage("unknown consent action '\(action)' (list, allow, revoke)", command: spec.name)
        }
    }
}

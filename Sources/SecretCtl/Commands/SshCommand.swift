import Keychain
import KeychainCore

/// `secretctl ssh list|remove|export-public|confine|unconfine`: the SSH keys secretd's agent
/// keeps in the login keyring, managed without `ssh-add` (through the agent's socket, so only
/// while the keyring is unlocked: a locked keyring lists no key), and confined to access groups.
enum SshCommand: Verb {
    /// The actions, in the order help names them.
    static let actions = ["list", "remove", "export-public", "confine", "unconfine"]
    /// `ACTION`: one of ``actions``.
    static let action = Positional<String>(
        "ACTION", help: "list, remove, export-public, confine or unconfine (list shows each confined key's group).")
    /// `KEY`: a key's fingerprint (`SHA256:…`) or comment.
    static let key = Positional<String?>(
        "KEY",
        help: "With remove, confine, unconfine (required) and export-public: a key's SHA256 fingerprint, as ssh-add -l shows it, "
            + "or its comment.")
    /// `GROUP`: the access group `confine` confines the key to.
    static let group = Positional<String?>(
        "GROUP", help: "With confine (required): the access group of access-groups.conf whose members alone may use the key.")
    /// `--password-stdin`: the login password, which unconfining or moving a confined key needs.
    static let passwordStdin = LongOption<Bool>(
        "password-stdin",
        help: "With unconfine, or confine of a key confined to another group: the login password (typed without echo, "
            + "or on standard input).")

    static let spec = CommandSpec(
        name: "ssh",
        abstract: "Manage the SSH keys secretd's agent keeps: list, remove, export-public, and confine to an access group's members.",
        arguments: [action, key, group], options: [Common.json, passwordStdin],
        examples: [
            "secretctl ssh list", "secretctl ssh export-public alice@laptop >> authorized_keys",
            "secretctl ssh remove SHA256:8Q3Dq0sJ2xk3m0ZC1mW3tY0uY3n2u5pJ2r4q6b8d0f0",
            "secretctl ssh confine alice@work com.example.work",
            "secretctl ssh unconfine --password-stdin alice@work < pw",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let action = parsed[Self.action]
        guard actions.contains(action) else {
            throw .usage("unknown ssh action '\(action)' (\(actions.joined(separator: ", ")))", command: spec.name)
        }
        if ["remove", "confine", "unconfine"].contains(action) && parsed[Self.key] == nil {
            throw .usage("\(action) needs a KEY (fingerprint or comment)", command: spec.name)
        }
        if action == "confine" && parsed[Self.group] == nil {
            throw .usage("confine needs a GROUP (an access group of access-groups.conf)", command: spec.name)
        }
        if action != "confine" && parsed[Self.group] != nil {
            throw .usage("only confine takes a GROUP", command: spec.name)
        }
        let agent = try SSHAgentClient()
        defer { agent.close() }
        if action == "confine" || action == "unconfine" { return try confine(parsed, through: agent) }
        let keys = try agent.keys()
        if keys.isEmpty, defaultKeyringIsLocked() {
            throw .failure("the login keyring is locked: its SSH keys come back once it is unlocked (secretctl unlock)", status: .locked)
        }
        switch parsed[Self.action] {
        case "list":
            if parsed[Common.json] {
                try Output.json(keys.map { key in
                    ["fingerprint": key.fingerprint, "type": key.type, "comment": key.comment].merging(key.group.map { ["group": $0] } ?? [:]) { $1 }
                })
            } else {
                Terminal.writeOutput(keys.map { key in
                    "\(key.fingerprint) \(key.type) \(key.comment)" + (key.group.map { " (confined to \($0))" } ?? "") + "\n"
                }.joined())
            }
        case "export-public":
            let chosen = try parsed[Self.key].map { (name) throws(CommandLineError) in [try matching(name, in: keys)] } ?? keys
            Terminal.writeOutput(chosen.map { $0.publicLine + "\n" }.joined())
        case "remove":
            guard let name = parsed[Self.key] else { throw .usage("remove needs a KEY (fingerprint or comment)", command: spec.name) }
            let chosen = try matching(name, in: keys)
            guard try agent.remove(chosen) else {
                let why = chosen.group.map { ": it is confined to \($0), and only its members may remove it (or unconfine it first)" } ?? ""
                throw .failure("the agent did not remove \(chosen.fingerprint)\(why)", status: .failed)
            }
            Terminal.writeError("secretctl: removed \(chosen.fingerprint) \(chosen.comment)\n")
        case let other:
            throw .usage("unknown ssh action '\(other)' (\(actions.joined(separator: ", ")))", command: spec.name)
        }
    }

    /// `confine KEY GROUP` and `unconfine KEY`: the agent finds the key (by fingerprint or
    /// comment) and says why when it refuses.
    private static func confine(_ parsed: ParsedCommand, through agent: SSHAgentClient) throws(CommandLineError) {
        guard let name = parsed[Self.key] else { throw .usage("a KEY is needed", command: spec.name) }
        let group = parsed[Self.action] == "confine" ? parsed[Self.group] : nil
        if let group, !AccessGroupNames.isGroupName(group) {
            throw .usage("'\(group)' is not a group name (letters, digits, '.', '-', '_'; not 'default')", command: spec.name)
        }
        var password = parsed[Self.passwordStdin]
            ? try Terminal.readSecretLine(limit: KeychainLimits.passwordSize, prompt: "Login password: ") : nil
        defer { password?.wipe() }
        if let reason = try agent.confine(name, to: group, password: password) {
            let status: ExitStatus = reason.hasPrefix("the agent has no key")
                ? .notFound : reason.hasPrefix("the login keyring is locked") ? .locked : .accessDenied
            throw .failure("secretd's agent refused: \(reason)", status: status)
        }
        Terminal.writeError("secretctl: \(group.map { "confined \(name) to the access group \($0)" } ?? "unconfined \(name)")\n")
    }

    /// Whether the provider says its default keyring is locked (false when it cannot be asked):
    /// the agent then lists no key.
    private static func defaultKeyringIsLocked() -> Bool {
        ((try? KeychainProvider.collections()) ?? []).contains { $0.isDefault && $0.isLocked }
    }

    /// The one key whose fingerprint or comment is `name`; not found (exit 1) when none is,
    /// a usage error when several share the comment.
    private static func matching(_ name: String, in keys: [SSHAgentClient.Key]) throws(CommandLineError) -> SSHAgentClient.Key {
        let found = keys.filter { $0.fingerprint == name || $0.comment == name }
        guard let first = found.first else {
            throw .failure("no SSH key \(name) in the agent (a locked keyring lists none)", status: .notFound)
        }
        guard found.count == 1 else { throw .usage("\(found.count) keys have the comment \(name); name one by its fingerprint", command: spec.name) }
        return first
    }
}

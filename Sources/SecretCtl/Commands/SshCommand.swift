import Keychain
import KeychainCore

/// `secretctl ssh list|remove|export-public`: the SSH keys secretd's agent keeps in the login
/// keyring, managed without `ssh-add` (through the agent's socket, so only while the keyring is
/// unlocked: a locked keyring lists no key).
enum SshCommand: Verb {
    /// `ACTION`: list, remove or export-public.
    static let action = Positional<String>("ACTION", help: "list, remove or export-public.")
    /// `KEY`: a key's fingerprint (`SHA256:…`) or comment.
    static let key = Positional<String?>(
        "KEY", help: "With remove (required) and export-public: a key's SHA256 fingerprint, as ssh-add -l shows it, or its comment.")

    static let spec = CommandSpec(
        name: "ssh", abstract: "List, remove or print the public keys of the SSH keys secretd's agent keeps.",
        arguments: [action, key], options: [Common.json],
        examples: [
            "secretctl ssh list", "secretctl ssh export-public alice@laptop >> authorized_keys",
            "secretctl ssh remove SHA256:8Q3Dq0sJ2xk3m0ZC1mW3tY0uY3n2u5pJ2r4q6b8d0f0",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        guard ["list", "remove", "export-public"].contains(parsed[Self.action]) else {
            throw .usage("unknown ssh action '\(parsed[Self.action])' (list, remove, export-public)", command: spec.name)
        }
        if parsed[Self.action] == "remove" && parsed[Self.key] == nil {
            throw .usage("remove needs a KEY (fingerprint or comment)", command: spec.name)
        }
        let agent = try SSHAgentClient()
        defer { agent.close() }
        let keys = try agent.keys()
        if keys.isEmpty, defaultKeyringIsLocked() {
            throw .failure("the login keyring is locked: its SSH keys come back once it is unlocked (secretctl unlock)", status: .locked)
        }
        switch parsed[Self.action] {
        case "list":
            if parsed[Common.json] {
                try Output.json(keys.map { ["fingerprint": $0.fingerprint, "type": $0.type, "comment": $0.comment] })
            } else {
                Terminal.writeOutput(keys.map { "\($0.fingerprint) \($0.type) \($0.comment)\n" }.joined())
            }
        case "export-public":
            let chosen = try parsed[Self.key].map { (name) throws(CommandLineError) in [try matching(name, in: keys)] } ?? keys
            Terminal.writeOutput(chosen.map { $0.publicLine + "\n" }.joined())
        case "remove":
            guard let name = parsed[Self.key] else { throw .usage("remove needs a KEY (fingerprint or comment)", command: spec.name) }
            let chosen = try matching(name, in: keys)
            guard try agent.remove(chosen) else { throw .failure("the agent did not remove \(chosen.fingerprint)", status: .failed) }
            Terminal.writeError("secretctl: removed \(chosen.fingerprint) \(chosen.comment)\n")
        case let other:
            throw .usage("unknown ssh action '\(other)' (list, remove, export-public)", command: spec.name)
        }
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

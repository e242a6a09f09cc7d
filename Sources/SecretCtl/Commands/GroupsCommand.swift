import KeychainCore
import FoundationEssentials
import Glibc
import Keychain

/// `secretctl groups ACTION [GROUP] [IDENTITY]`: secretd's access groups, listed, shown and
/// changed (a change is confirmed with the login password, or through secretd's prompt).
enum GroupsCommand: Verb {
    /// `ACTION`: what to do.
    static let action = Positional<String>("ACTION", help: "list, show, add-member or remove-member.")
    /// `GROUP`, for every action but `list`.
    static let group = Positional<String?>("GROUP", help: "The group (for show, add-member, remove-member).")
    /// `IDENTITY`, for `add-member` and `remove-member`.
    static let identity = Positional<String?>(
        "IDENTITY", help: "flatpak:ID, snap:NAME, unit:NAME or exe:/PATH (for add-member, remove-member).")
    /// `--password-stdin`: the login password instead of secretd's prompt.
    static let passwordStdin = LongOption<Bool>(
        "password-stdin",
        help: "Confirm a change with the login password (typed without echo, or on standard input) "
            + "instead of secretd's prompt.")

    static let spec = CommandSpec(
        name: "groups", abstract: "List, show and change secretd's access groups (changes need the login password).",
        arguments: [action, group, identity], options: [Common.json, passwordStdin],
        examples: [
            "secretctl groups list",
            "secretctl groups add-member com.example.deploy exe:/usr/local/bin/deploy",
            "secretctl groups remove-member --password-stdin com.example.deploy unit:backup.service < pw",
        ])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let json = parsed[Common.json]
        let action = parsed[Self.action]
        let group = parsed[Self.group]
        let identity = parsed[Self.identity]
        switch action {
        case "list":
            guard group == nil else { throw .usage("groups list takes no GROUP", command: spec.name) }
            let (groups, apps) = try policy()
            let mine = Set(try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.whoAmI() }.groups)
            if json {
                try Output.json([
                    "groups": groups.map { describe($0, member: mine.contains($0.name)) },
                    "apps": apps.sorted { $0.key < $1.key }.map { ["identity": $0.key, "groups": $0.value] as [String: Any] },
                ])
                return
            }
            if groups.isEmpty { Terminal.writeOutput("no access groups besides default\n") }
            for entry in groups {
                let notes = [mine.contains(entry.name) ? "you are a member" : nil, entry.ask ? "ask" : nil].compactMap { $0 }
                Terminal.writeOutput(
                    "\(entry.name)\t\(entry.members.count) member\(entry.members.count == 1 ? "" : "s")"
                        + (notes.isEmpty ? "" : "\t(\(notes.joined(separator: ", ")))") + "\n")
            }
            for (app, appGroups) in apps.sorted(by: { $0.key < $1.key }) {
                Terminal.writeOutput("app \(app)\tconfined to \(appGroups.joined(separator: ", "))\n")
            }
        case "show":
            guard let group, identity == nil else { throw .usage("groups show takes one GROUP", command: spec.name) }
            let (groups, apps) = try policy()
            guard let entry = groups.first(where: { $0.name == group }) else {
                throw .failure("no access group '\(group)' in secretd's policy", status: .notFound)
            }
            let confined = apps.filter { $0.value.contains(group) }.keys.sorted()
            if json {
                var fields = describe(entry, member: nil)
                fields["confined_apps"] = confined
                try Output.json(fields)
                return
            }
            Terminal.writeOutput("group:   \(entry.name)\nask:     \(entry.ask ? "yes" : "no")\n")
            for member in entry.members { Terminal.writeOutput("member:  \(member)\n") }
            for app in confined { Terminal.writeOutput("app:     \(app) (confined)\n") }
        case "add-member", "remove-member":
            guard let group, let identity else {
                throw .usage("groups \(action) takes GROUP and IDENTITY", command: spec.name)
            }
            guard AccessGroupNames.isGroupName(group) else {
                throw .usage("'\(group)' is not a group name (letters, digits, '.', '-', '_'; not 'default')", command: spec.name)
            }
            try Common.checkIdentity(identity, verb: spec.name)
            var password = try Common.loginPassword(if: parsed[Self.passwordStdin])
            defer { password?.wipe() }
            let secret = password
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainProvider.changeAccessGroup(add: action == "add-member", group: group, identity: identity, password: secret)
            }
        default:
            throw .usage("unknown groups action '\(action)' (list, show, add-member, remove-member)", command: spec.name)
        }
    }

    private static func policy() throws(CommandLineError) -> (groups: [KeychainProvider.AccessGroup], apps: [String: [String]]) {
        try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.accessGroups() }
    }

    private static func describe(_ group: KeychainProvider.AccessGroup, member: Bool?) -> [String: Any?] {
        var fields: [String: Any?] = ["name": group.name, "ask": group.ask, "members": group.members]
        if let member { fields["you_are_member"] = member }
        return fields
    }
}

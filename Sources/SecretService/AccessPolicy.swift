import FoundationEssentials
package import KeychainCore
import Glibc
import SecretStore

/// The access group policy of `access-groups.conf` (see secretd.conf(5)):
///
/// ```
/// [group "com.example.deploy"]
/// member = exe:/usr/local/bin/deploy
/// member = unit:backup.service
/// ask = yes
/// accessible = after-first-unlock
/// consent = new-readers
/// [app "exe:/opt/tool/bin/tool"]
/// groups = com.example.tool, com.example.deploy
/// ```
///
/// An `[app]` entry confines that identity to its listed groups (the first is its default).
/// Every other caller is unconfined: it belongs to `default` plus every group that names it
/// as a member, and its default group is `default`.
package struct AccessPolicy: Equatable, Sendable {
    /// A named group.
    package struct Group: Equatable, Sendable {
        /// Its name, as items carry it.
        package var name: String
        /// The identities that belong to it, as written (`exe:/usr/bin/tool`).
        package var members: [String]
        /// Whether non-members may ask the person for access (deny / allow once / always).
        package var ask: Bool
        /// The accessibility class of its items that name none (`accessible =`).
        package var accessibility: ItemAccessibility
        /// Whether its members' first reads ask the person (`consent =`); nil: secretd.conf's.
        package var consent: ReaderConsentMode?

        /// A group with these settings.
        package init(name: String, members: [String], ask: Bool, accessibility: ItemAccessibility = .whenUnlocked) {
            self.name = name
            self.members = members
            self.ask = ask
            self.accessibility = accessibility
        }
    }

    /// The groups, in file order.
    package var groups: [Group] = []
    /// Confined identities and their groups (the first is the default).
    package var apps: [String: [String]] = [:]

    /// The file name inside the configuration directory.
    static let fileName = "access-groups.conf"

    /// The groups a caller belongs to, and the one it creates items in by default.
    package struct Membership: Equatable, Sendable {
        /// Every group the caller belongs to.
        package var groups: [String]
        /// Where items it creates without naming a group go.
        package var defaultGroup: String
        /// Whether an `[app]` entry confines it.
        package var confined: Bool
    }

    /// The groups `identity` belongs to. A Flatpak app belongs to its own group as well
    /// (`flatpak.ID`, where the desktop portal keeps its key), which no one else can join.
    package func membership(of identity: CallerIdentity) -> Membership {
        let name = identity.description
        let own = identity.kind == .flatpak ? [AccessGroupNames.appGroup(of: identity.name)] : []
        if let confinedTo = apps[name], let first = confinedTo.first {
            return Membership(groups: confinedTo + own, defaultGroup: first, confined: true)
        }
        let named = groups.filter { $0.members.contains(name) }.map(\.name)
        return Membership(groups: [AccessGroupNames.defaultGroup] + named + own, defaultGroup: AccessGroupNames.defaultGroup,
                          confined: false)
    }

    /// The group called `name`, if the policy defines it.
    package func group(_ name: String) -> Group? { groups.first { $0.name == name } }

    // MARK: - Reading

    /// Reads the policy from `directory`; an empty policy when the file does not exist.
    /// Refuses a file that others may write (anyone who can write it can join any group).
    static func load(from directory: URL) throws(ConfigurationError) -> AccessPolicy {
        let path = directory.appendingPathComponent(fileName).path
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return AccessPolicy() }
            throw ConfigurationError(file: path, line: 0, message: "cannot be read: \(String(cString: strerror(errno)))")
        }
        guard info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw ConfigurationError(file: path, line: 0, message: "must belong to you and not be writable by others")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(file: path, line: 0, message: "cannot be read as UTF-8 text")
        }
        return try parse(text, file: path)
    }

    /// Parses the text of a policy file.
    package static func parse(_ text: String, file: String) throws(ConfigurationError) -> AccessPolicy {
        var policy = AccessPolicy()
        var section: PolicyLine.Section?
        for (index, raw) in text.lines.enumerated() {
            func fail(_ message: String) -> ConfigurationError {
                ConfigurationError(file: file, line: index + 1, message: message)
            }
            switch try PolicyLine(raw, fail: fail) {
            case .blank:
                continue
            case .header(let header):
                switch header {
                case .group(let name):
                    if policy.group(name) != nil { throw fail("group \"\(name)\" is defined twice") }
                    policy.groups.append(Group(name: name, members: [], ask: false))
                case .app(let identity):
                    if policy.apps[identity] != nil { throw fail("app \"\(identity)\" is defined twice") }
                    policy.apps[identity] = []
                }
                section = header
            case .setting(let key, let value):
                switch (section, key) {
                case (nil, _):
                    throw fail("'\(key)' outside a [group \"NAME\"] or [app \"IDENTITY\"] section")
                case (.group(let name)?, "member"):
                    guard CallerIdentity(parsing: value) != nil else {
                        throw fail("'\(value)' is not an identity (flatpak:ID, snap:NAME, unit:NAME or exe:/PATH)")
                    }
                    let index = policy.groups.firstIndex { $0.name == name }!
                    if !policy.groups[index].members.contains(value) { policy.groups[index].members.append(value) }
                case (.group(let name)?, "ask"):
                    guard let ask = ["yes": true, "no": false, "true": true, "false": false][value] else {
                        throw fail("ask takes yes or no")
                    }
                    policy.groups[policy.groups.firstIndex { $0.name == name }!].ask = ask
                case (.group(let name)?, "accessible"):
                    guard let accessibility = ItemAccessibility(rawValue: value) else {
                        throw fail("accessible takes one of \(ItemAccessibility.names)")
                    }
                    policy.groups[policy.groups.firstIndex { $0.name == name }!].accessibility = accessibility
                case (.group(let name)?, "consent"):
                    guard let mode = ReaderConsentMode(rawValue: value) else { throw fail("consent takes \(ReaderConsentMode.names)") }
                    policy.groups[policy.groups.firstIndex { $0.name == name }!].consent = mode
                case (.app(let identity)?, "groups"):
                    let names = value.split(separator: ",").map { $0.trimmingWhitespace }
                    guard !names.isEmpty, names.allSatisfy({ AccessGroupNames.isGroupName($0) || $0 == AccessGroupNames.defaultGroup })
                    else { throw fail("groups takes a comma-separated list of group names") }
                    if let own = names.first(where: AccessGroupNames.isAppGroup) {
                        throw fail("'\(own)' is a Flatpak app's own group, which only that app belongs to")
                    }
                    policy.apps[identity] = names
                case (.group?, _), (.app?, _):
                    throw fail("unknown setting '\(key)'")
                }
            }
        }
        if let (identity, _) = policy.apps.first(where: { $0.value.isEmpty }) {
            throw ConfigurationError(file: file, line: 0, message: "app \"\(identity)\" lists no groups")
        }
        return policy
    }
}

/// One line of `access-groups.conf`.
package enum PolicyLine: Equatable {
    /// What a section header opens.
    package enum Section: Equatable {
        /// `[group "NAME"]`.
        case group(String)
        /// `[app "IDENTITY"]`.
        case app(String)
    }

    /// Empty, or a comment.
    case blank
    /// `[group "NAME"]` or `[app "IDENTITY"]`.
    case header(Section)
    /// `key = value`.
    case setting(key: String, value: String)

    /// Parses `line`; `fail` makes the error for a malformed one.
    init(_ line: String, fail: (String) -> ConfigurationError) throws(ConfigurationError) {
        let trimmed = line.trimmingWhitespace  // a CRLF line keeps its CR
        if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") {
            self = .blank
        } else if trimmed.hasPrefix("[") {
            guard trimmed.hasSuffix("]"), let open = trimmed.firstIndex(of: "\""), let close = trimmed.lastIndex(of: "\""),
                open < close
            else { throw fail("expected [group \"NAME\"] or [app \"IDENTITY\"]") }
            let kind = trimmed[trimmed.index(after: trimmed.startIndex)..<open].trimmingWhitespace
            let name = String(trimmed[trimmed.index(after: open)..<close])
            switch kind {
            case "group":
                guard AccessGroupNames.isGroupName(name) else {
                    throw fail("'\(name)' is not a group name (letters, digits, '.', '-', '_'; not 'default')")
                }
                guard !AccessGroupNames.isAppGroup(name) else {
                    throw fail("'\(name)' is a Flatpak app's own group (\(AccessGroupNames.appGroupPrefix)ID), which only that app belongs to")
                }
                self = .header(.group(name))
            case "app":
                guard CallerIdentity(parsing: name) != nil else {
                    throw fail("'\(name)' is not an identity (flatpak:ID, snap:NAME, unit:NAME or exe:/PATH)")
                }
                self = .header(.app(name))
            default:
                throw fail("unknown section '\(kind)' (expected group or app)")
            }
        } else {
            let parts = trimmed.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { throw fail("expected 'key = value'") }
            self = .setting(key: parts[0], value: parts[1])
        }
    }
}

import KeychainCore
import Foundation
import SecretService

/// `access-groups.conf`: the parser, and the edits secretd makes to the file (add and remove
/// a member), which must leave a file that parses to the intended policy.
///
/// The input is the file, optionally followed by a NUL byte and `GROUP IDENTITY` naming an
/// edit to try; without one, the edits tried are a new group and each group's own members.
enum AccessPolicyTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "access-policy", summary: "access-groups.conf, and member edits of it", maximumLength: 4096, run: run)

    private static func run(_ data: Data) {
        let parts = data.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
        // As AccessPolicy.load reads it: UTF-8 text, or refused.
        guard let text = String(data: Data(parts[0]), encoding: .utf8) else { return }
        let policy: AccessPolicy
        do {
            policy = try AccessPolicy.parse(text, file: "access-groups.conf")
        } catch {
            let lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).count
            require((0...lines).contains(error.line), "error on line \(error.line) of \(lines): \(error)")
            return  // secretd never edits a file it cannot parse
        }
        for group in policy.groups {
            require(AccessGroupNames.isGroupName(group.name), "a group has an invalid name: \(group.name.debugDescription)")
            require(policy.groups.filter { $0.name == group.name }.count == 1, "group \(group.name) appears twice")
            for member in group.members {
                require(CallerIdentity(parsing: member) != nil, "a member is not an identity: \(member.debugDescription)")
            }
        }
        for (identity, groups) in policy.apps {
            require(CallerIdentity(parsing: identity) != nil && !groups.isEmpty, "app \(identity.debugDescription) is invalid")
        }

        var edits: [(group: String, identity: String)] = [("com.example.fuzz", "exe:/usr/bin/fuzz")]
        for group in policy.groups {
            edits.append((group.name, "unit:fuzz.service"))
            for member in group.members { edits.append((group.name, member)) }
        }
        if parts.count == 2 {
            let named = String(decoding: parts[1], as: UTF8.self)
            if let space = named.firstIndex(of: " ") {
                edits = [(String(named[..<space]), String(named[named.index(after: space)...]))]
            }
        }
        // secretd checks these before it edits (AccessGroupsObject.swift, Provider+Access.swift):
        // a group name, not a Flatpak app's own group, an identity.
        for edit in edits where AccessGroupNames.isGroupName(edit.group) && !AccessGroupNames.isAppGroup(edit.group) {
            guard let identity = CallerIdentity(parsing: edit.identity) else { continue }
            checkEdits(text, policy: policy, group: edit.group, identity: identity)
        }
    }

    /// Adding `identity` to `group` gives a file that parses to `policy` with just that member
    /// more; adding again changes nothing; removing it again gives `policy` without it.
    private static func checkEdits(_ text: String, policy: AccessPolicy, group: String, identity: CallerIdentity) {
        let member = identity.description
        var expected = policy
        if let index = expected.groups.firstIndex(where: { $0.name == group }) {
            if !expected.groups[index].members.contains(member) { expected.groups[index].members.append(member) }
        } else {
            expected.groups.append(AccessPolicy.Group(name: group, members: [member], ask: false))
        }
        let added = AccessPolicyFile.adding(member, to: group, in: text)
        let withMember = parseEdited(added, "adding \(member.debugDescription) to \(group)")
        require(withMember == expected,
                "adding \(member.debugDescription) to \(group) changed more than that:\n\(added.debugDescription)")
        if withMember.apps[member] == nil {
            require(withMember.membership(of: identity).groups.contains(group),
                    "\(member.debugDescription) is listed in \(group) but not in it")
        }
        require(AccessPolicyFile.adding(member, to: group, in: added) == added,
                "adding \(member.debugDescription) to \(group) twice changed the file")

        let removed = AccessPolicyFile.removing(member, from: group, in: added)
        let withoutMember = parseEdited(removed, "removing \(member.debugDescription) from \(group)")
        let index = expected.groups.firstIndex { $0.name == group }!
        expected.groups[index].members.removeAll { $0 == member }
        require(withoutMember == expected,
                "removing \(member.debugDescription) from \(group) changed more or less than that:\n\(removed.debugDescription)")
    }

    /// The policy in a file `edit` produced; an edit that leaves a file secretd refuses is a failure.
    private static func parseEdited(_ text: String, _ edit: String) -> AccessPolicy {
        do {
            return try AccessPolicy.parse(text, file: "edited")
        } catch {
            fatalError("\(edit) broke the file: \(error)\n\(text.debugDescription)")
        }
    }
}

// secretd's access groups interface, called over GDBus on libsecret's connection.

internal import CLibSecret
import DBusValues
import KeychainCore
import FoundationEssentials
import Glibc

extension LibSecret {
    // MARK: - secretd's access groups

    /// Calls `method` of secretd's access groups interface (``callSecretd(_:_:_:_:encoded:feature:)``).
    private static func callAccessGroups(
        _ service: UnsafeMutablePointer<SecretService>, _ method: String, _ arguments: [DBusValue] = [],
        encoded: [OpaquePointer] = []
    ) throws(KeychainError) -> [DBusValue] {
        try callSecretd(service, SecretServiceNames.Interface.accessGroups, method, arguments, encoded: encoded, feature: "access groups")
    }

    /// The reply `values` did not have the shape the interface declares.
    private static func malformed(_ method: String) -> KeychainError {
        .protocolError(reason: "the reply to \(method) does not have the declared type")
    }

    /// secretd's answer to WhoAmI: the caller's identity, groups, default group, confinement.
    static func whoAmI() throws(KeychainError) -> (identity: String, groups: [String], defaultGroup: String, confined: Bool) {
        try withService { service throws(KeychainError) in
            let reply = try callAccessGroups(service, "WhoAmI")
            guard reply.count == 4, let identity = reply[0].string, let groups = reply[1].strings,
                let defaultGroup = reply[2].string, let confined = reply[3].boolean
            else { throw malformed("WhoAmI") }
            return (identity, groups, defaultGroup, confined)
        }
    }

    /// secretd's policy: groups (name, ask mode, members) and confined apps with their groups.
    static func accessGroupPolicy() throws(KeychainError)
        -> (groups: [(name: String, ask: Bool, members: [String])], apps: [String: [String]])
    {
        try withService { service throws(KeychainError) in
            let reply = try callAccessGroups(service, "GetPolicy")
            guard reply.count == 2, case .array("(sbas)", let groupValues) = reply[0],
                case .dictionary("s", "as", let appEntries) = reply[1]
            else { throw malformed("GetPolicy") }
            var groups: [(name: String, ask: Bool, members: [String])] = []
            for value in groupValues {
                guard let fields = value.tuple, fields.count == 3, let name = fields[0].string, let ask = fields[1].boolean,
                    let members = fields[2].strings
                else { throw malformed("GetPolicy") }
                groups.append((name, ask, members))
            }
            var apps: [String: [String]] = [:]
            for entry in appEntries {
                guard let app = entry.key.string, let appGroups = entry.value.strings else { throw malformed("GetPolicy") }
                apps[app] = appGroups
            }
            return (groups, apps)
        }
    }

    /// No password: a secret in no session ("/"), which asks secretd for its prompt instead.
    static var noSecret: DBusValue {
        .tuple([
            .objectPath(SecretServiceNames.Path.none), .bytes(DBusBytes([])), .bytes(DBusBytes([])), .string("text/plain"),
        ])
    }

    /// Adds or removes a member of a group; the person consents with the login `password`
    /// (sent in the encrypted session), or through the provider's prompt when it is nil.
    static func changeAccessGroup(add: Bool, group: String, identity: String, password: SecretBuffer?) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let method = add ? "AddMember" : "RemoveMember"
            let reply: [DBusValue]
            if let password {
                reply = try callAccessGroups(
                    service, method, [.string(group), .string(identity)], encoded: [try encodedPassword(service, password)])
            } else {
                reply = try callAccessGroups(service, method, [.string(group), .string(identity), noSecret])
            }
            guard let prompt = reply.first?.objectPath else { throw malformed(method) }
            guard prompt != SecretServiceNames.Path.none else { return }
            try performPrompt(service, prompt)
        }
    }
}

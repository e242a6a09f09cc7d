// io.github.secretd.AccessGroups1
//
// Access groups as clients ask about them: who the caller is, the policy, membership changes
// (what a caller may see is Provider+Access.swift's).

import KeychainCore
import FoundationEssentials
import Glibc
import SecretCrypto
import SecretStore
import DBusValues

extension Introspection {
    /// secretd's own interface for access groups (see secretd(1)).
    static let accessGroupsInterface = BusInterface(name: accessGroups, objects: .service, methods: [
        Method(name: "WhoAmI", rule: .anyClient, results: [
            Argument(name: "identity", type: "s"), Argument(name: "groups", type: "as"),
            Argument(name: "default_group", type: "s"), Argument(name: "confined", type: "b"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in reply(.success(try AccessGroupsObject(provider).whoAmI(call.sender))) }),
        Method(name: "GetPolicy", rule: .unconfined, results: [Argument(name: "groups", type: "a(sbas)"), Argument(name: "apps", type: "a{sas}")],
               handler: .later { provider, _, reply throws(SecretServiceError) in reply(.success(AccessGroupsObject(provider).policyDescription())) }),
        Method(name: "AddMember", rule: .unconfined, arguments: [
            Argument(name: "group", type: "s"), Argument(name: "identity", type: "s"),
            Argument(name: "login_password", type: secret),
        ], results: [Argument(name: "prompt", type: "o")],
               handler: .later { provider, call, reply throws(SecretServiceError) in try AccessGroupsObject(provider).changeMembership(call, adding: true, reply: reply) }),
        Method(name: "RemoveMember", rule: .unconfined, arguments: [
            Argument(name: "group", type: "s"), Argument(name: "identity", type: "s"),
            Argument(name: "login_password", type: secret),
        ], results: [Argument(name: "prompt", type: "o")],
               handler: .later { provider, call, reply throws(SecretServiceError) in try AccessGroupsObject(provider).changeMembership(call, adding: false, reply: reply) }),
    ])
}

/// secretd's AccessGroups1 interface: who the caller is, the policy in force, and membership
/// changes confirmed with the login password.
struct AccessGroupsObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `WhoAmI`: the caller's identity, groups, default group and whether it is confined.
    fileprivate func whoAmI(_ sender: String) throws(SecretServiceError) -> DBusValue {
        let caller = try provider.caller(sender).get()
        let membership = provider.membership(caller)
        return .tuple([
            .string(caller.name), .array(element: "s", membership.groups.map { .string($0) }),
            .string(membership.defaultGroup), .boolean(membership.confined),
        ])
    }


    /// `GetPolicy`: the groups (name, ask, members) and the apps' groups.
    fileprivate func policyDescription() -> DBusValue {
        let groups = provider.policy.groups.map { group in
            DBusValue.tuple([.string(group.name), .boolean(group.ask), .array(element: "s", group.members.map { .string($0) })])
        }
        let apps = provider.policy.apps.sorted { $0.key < $1.key }.map { app in
            DBusValue.Entry(key: .string(app.key), value: .array(element: "s", app.value.map { .string($0) }))
        }
        return .tuple([.array(element: "(sbas)", groups), .dictionary(key: "s", value: "as", apps)])
    }

    /// `AddMember` and `RemoveMember`: with the login password, answered once its check, off
    /// the main loop, is done; without it (session `/`), through a prompt the person answers.
    fileprivate func changeMembership(
        _ call: AdmittedCall, adding: Bool, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) throws(SecretServiceError) {
        let group = try call.argument(0, as: String.self)
        let identity = try call.argument(1, as: String.self)
        let password = try call.argument(2, as: DBusValue.self)
        guard AccessGroupNames.isGroupName(group) else { throw .invalidArgs("“\(group)” is not a group name") }
        guard !AccessGroupNames.isAppGroup(group) else {
            throw .forbidden("“\(group)” is a Flatpak app's own group, which only that app belongs to")
        }
        guard CallerIdentity(parsing: identity) != nil else {
            throw .invalidArgs("“\(identity)” is not an identity (flatpak:ID, snap:NAME, unit:NAME or exe:/PATH)")
        }
        let change = PolicyChange(add: adding, group: group, identity: identity)
        if password.tuple?.first?.objectPath == ObjectPaths.none {
            // No password: the person confirms through a prompt, if there is a way to ask.
            guard provider.options.configuration.pinentry != nil else {
                throw .forbidden(
                    "secretd has no pinentry to ask for your consent; give the login password instead (secretctl groups … --password-stdin)")
            }
            return reply(provider.addPrompt(Prompt(owner: call.sender, action: .changePolicy(change))).map { .tuple([.objectPath($0)]) })
        }
        let (loginPassword, _) = try provider.decodeSecret(password, from: call.sender).get()
        provider.verifyLoginPassword(loginPassword) { [weak provider = provider] verified in
            guard let provider else { return }
            reply(verified.flatMap { provider.apply(change) }.map { .tuple([.objectPath(ObjectPaths.none)]) })
        }
    }
}

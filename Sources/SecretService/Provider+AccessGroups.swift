// Access groups: who each client is, what it may see, and secretd's own AccessGroups interface.

import KeychainCore
import FoundationEssentials
import Glibc
import SecretCrypto
import SecretStore
import DBusValues

/// What a caller may do with an item, given the item's group.
enum ItemAccess {
    /// Everything: the caller belongs to the group (or was allowed once).
    case full
    /// The item shows as locked; unlocking it asks the person (an `ask` group).
    case askable
    /// The item does not exist for this caller.
    case hidden
}

/// A change to the policy that needs the person's consent.
struct PolicyChange: Equatable {
    /// Add (true) or remove (false) the member.
    var add: Bool
    /// The group.
    var group: String
    /// The identity, as written in the policy.
    var identity: String
}

extension Introspection {
    /// secretd's own interface for access groups (see secretd(1)).
    static let accessGroupsInterface = BusInterface(name: accessGroups, objects: .service, methods: [
        Method(name: "WhoAmI", rule: .anyClient, results: [
            Argument(name: "identity", type: "s"), Argument(name: "groups", type: "as"),
            Argument(name: "default_group", type: "s"), Argument(name: "confined", type: "b"),
        ], handler: .later { daemon, call, reply throws(SecretServiceError) in reply(.success(try daemon.whoAmI(call.sender))) }),
        Method(name: "GetPolicy", rule: .unconfined, results: [Argument(name: "groups", type: "a(sbas)"), Argument(name: "apps", type: "a{sas}")],
               handler: .later { daemon, _, reply throws(SecretServiceError) in reply(.success(daemon.policyDescription())) }),
        Method(name: "AddMember", rule: .unconfined, arguments: [
            Argument(name: "group", type: "s"), Argument(name: "identity", type: "s"),
            Argument(name: "login_password", type: secret),
        ], results: [Argument(name: "prompt", type: "o")],
               handler: .later { daemon, call, reply throws(SecretServiceError) in try daemon.changeMembership(call, adding: true, reply: reply) }),
        Method(name: "RemoveMember", rule: .unconfined, arguments: [
            Argument(name: "group", type: "s"), Argument(name: "identity", type: "s"),
            Argument(name: "login_password", type: secret),
        ], results: [Argument(name: "prompt", type: "o")],
               handler: .later { daemon, call, reply throws(SecretServiceError) in try daemon.changeMembership(call, adding: false, reply: reply) }),
    ])
}

extension Provider {
    // MARK: - Callers

    /// The caller behind `sender` (``CallerRegistry/caller(_:on:)``).
    func caller(_ sender: String) -> Result<Caller, SecretServiceError> {
        callers.caller(sender, on: server)
    }

    func identify(_ sender: String, then body: @escaping (SecretServiceError?) -> Void) -> Bool {
        callers.identify(sender, on: server, then: body)
    }

    /// The groups `caller` belongs to under the current policy.
    func membership(_ caller: Caller) -> AccessPolicy.Membership {
        policy.membership(of: caller.identity)
    }

    /// What `caller` may do with items of `group` (nil: an item from before groups were
    /// recorded, treated as `default` until its keyring is unlocked).
    func access(_ caller: Caller, to group: String?) -> ItemAccess {
        access(caller, membership(caller), to: group)
    }

    /// ``access(_:to:)`` with the caller's membership worked out once, for long item lists.
    private func access(_ caller: Caller, _ membership: AccessPolicy.Membership, to group: String?) -> ItemAccess {
        let group = group ?? AccessGroupNames.defaultGroup
        if membership.groups.contains(group) || caller.allowedOnce.contains(group) { return .full }
        if policy.group(group)?.ask == true { return .askable }
        return .hidden
    }

    /// The item at `path` with what `sender` may do with it; nil when there is none or it is
    /// hidden from `sender` (so it is reported as not existing).
    func visibleItem(at path: String, for sender: String) -> (Store.ItemRecord, Store.CollectionRecord, ItemAccess)? {
        guard let (item, collection) = item(at: path), case .success(let caller) = caller(sender) else { return nil }
        let access = access(caller, to: item.accessGroup)
        return access == .hidden ? nil : (item, collection, access)
    }

    /// `items` without those hidden from `sender`, each with its access.
    func visible(_ items: [Store.ItemRecord], for sender: String) -> [(Store.ItemRecord, ItemAccess)] {
        guard case .success(let caller) = caller(sender) else { return [] }
        let membership = membership(caller)
        return items.compactMap { item in
            let access = access(caller, membership, to: item.accessGroup)
            return access == .hidden ? nil : (item, access)
        }
    }

    /// Places a new or changed item's attributes in a group `sender` belongs to: a missing
    /// group attribute means `unnamed` (for a new item: the caller's default group); a group
    /// the caller is not in is refused.
    func placeInGroup(
        _ attributes: [String: String], for sender: String, unnamed: String? = nil
    ) -> Result<[String: String], SecretServiceError> {
        caller(sender).flatMap { caller in
            let membership = membership(caller)
            var placed = attributes
            let group = attributes[AccessGroupNames.attribute] ?? unnamed ?? membership.defaultGroup
            guard membership.groups.contains(group) || caller.allowedOnce.contains(group) else {
                return .failure(.forbidden("\(caller.identity) is not a member of the access group “\(group)”"))
            }
            if group != AccessGroupNames.defaultGroup { placed[AccessGroupNames.attribute] = group }
            // The accessibility class: the item's own, else its group's (`accessible =`).
            if let named = attributes[ItemAccessibility.attribute] {
                guard ItemAccessibility(rawValue: named) != nil else {
                    return .failure(.invalidArgs("\(ItemAccessibility.attribute) must be one of \(ItemAccessibility.names)"))
                }
            } else if let groupDefault = policy.group(group)?.accessibility, groupDefault != .whenUnlocked {
                placed[ItemAccessibility.attribute] = groupDefault.rawValue
            }
            return .success(placed)
        }
    }

    // MARK: - Policy

    /// Reads `access-groups.conf` again; a bad file is logged (file and line) and the policy
    /// in force stays.
    func reloadPolicy(reason: String) {
        guard let directory = options.configDirectory else { return }
        do {
            let loaded = try AccessPolicy.load(from: directory)
            if loaded != policy {
                policy = loaded
                Log.info("loaded \(AccessPolicy.fileName) (\(reason)): groups \(loaded.groups.count), confined apps \(loaded.apps.count)")
            }
        } catch {
            Log.error("\(error); the previous access group policy stays in force")
        }
    }

    /// Applies a consented change to the policy file, then reloads it.
    func apply(_ change: PolicyChange) -> Result<Void, SecretServiceError> {
        guard let directory = options.configDirectory else { return .failure(.failed("secretd has no configuration directory")) }
        let url = directory.appendingPathComponent(AccessPolicy.fileName)
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        let edited = change.add
            ? AccessPolicyFile.adding(change.identity, to: change.group, in: text)
            : AccessPolicyFile.removing(change.identity, from: change.group, in: text)
        do {
            // Check the result parses before replacing the file; a broken file is never written.
            _ = try AccessPolicy.parse(edited, file: url.path)
            try AccessPolicyFile.write(edited, to: url)
        } catch {
            Log.error("cannot change the access group policy: \(error)")
            return .failure(.failed("cannot change \(AccessPolicy.fileName): \(error.message)"))
        }
        Log.info("\(change.add ? "added" : "removed") \(change.identity) \(change.add ? "to" : "from") the access group \(change.group)")
        reloadPolicy(reason: "changed through secretd")
        return .success(())
    }

    // MARK: - The AccessGroups interface

    /// `WhoAmI`: the caller's identity, groups, default group and whether it is confined.
    fileprivate func whoAmI(_ sender: String) throws(SecretServiceError) -> DBusValue {
        let caller = try caller(sender).get()
        let membership = membership(caller)
        return .tuple([
            .string(caller.identity.description), .array(element: "s", membership.groups.map { .string($0) }),
            .string(membership.defaultGroup), .boolean(membership.confined),
        ])
    }

    /// `GetPolicy`: the groups (name, ask, members) and the apps' groups.
    fileprivate func policyDescription() -> DBusValue {
        let groups = policy.groups.map { group in
            DBusValue.tuple([.string(group.name), .boolean(group.ask), .array(element: "s", group.members.map { .string($0) })])
        }
        let apps = policy.apps.sorted { $0.key < $1.key }.map { app in
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
            guard options.configuration.pinentry != nil else {
                throw .forbidden(
                    "secretd has no pinentry to ask for your consent; give the login password instead (secretctl groups … --password-stdin)")
            }
            return reply(addPrompt(Prompt(owner: call.sender, action: .changePolicy(change))).map { .tuple([.objectPath($0)]) })
        }
        let (loginPassword, _) = try decodeSecret(password, from: call.sender).get()
        verifyLoginPassword(loginPassword) { [weak self] verified in
            guard let self else { return }
            reply(verified.flatMap { self.apply(change) }.map { .tuple([.objectPath(ObjectPaths.none)]) })
        }
    }

    /// Checks `password` against the login keyring's, through the keyring's throttle as
    /// unlocking does; the keyring's state does not change.
    func verifyLoginPassword(_ password: SecureBytes, completion: @escaping (Result<Void, SecretServiceError>) -> Void) {
        guard let login = try? store.collection(named: Self.loginName) else {
            return completion(.failure(.failed("there is no login keyring to check the password against")))
        }
        checkPassword(password, of: login, purpose: " for an access group change") { completion($0.map { _ in }) }
    }
}

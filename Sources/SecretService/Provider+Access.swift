// Who calls and what the access groups let them see: callers identified once, items shown
// by group, items placed in a group, the policy reloaded and edited.

import KeychainCore
import FoundationEssentials
import Glibc
import SecretCrypto
import SecretStore
import DBusValues

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
    /// A caller in a `secretctl run` is confined to the run's group (if any).
    func membership(_ caller: Caller) -> AccessPolicy.Membership {
        if let scope = caller.scope {
            return AccessPolicy.Membership(
                groups: scope.group.map { [$0] } ?? [], defaultGroup: scope.group ?? AccessGroupNames.defaultGroup, confined: true)
        }
        return policy.membership(of: caller.identity)
    }

    /// What `caller` may do with items of `group` (nil: an item from before groups were
    /// recorded, treated as `default` until its keyring is unlocked).
    func access(_ caller: Caller, to group: String?) -> ItemAccess {
        access(caller, membership(caller), to: group)
    }

    /// The item at `path` with what `sender` may do with it; nil when there is none or it is
    /// hidden from `sender` (so it is reported as not existing).
    func visibleItem(at path: String, for sender: String) -> (Store.ItemRecord, Store.CollectionRecord, ItemAccess)? {
        guard let (item, collection) = item(at: path), case .success(let caller) = caller(sender) else { return nil }
        if let scope = caller.scope { return scope.allows(item, in: keyring) ? (item, collection, .full) : nil }
        let access = access(caller, to: item.accessGroup)
        return access == .hidden ? nil : (item, collection, access)
    }

    /// `items` without those hidden from `sender`, each with its access.
    func visible(_ items: [Store.ItemRecord], for sender: String) -> [(Store.ItemRecord, ItemAccess)] {
        guard case .success(let caller) = caller(sender) else { return [] }
        if let scope = caller.scope { return items.filter { scope.allows($0, in: keyring) }.map { ($0, .full) } }
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
            var group = attributes[AccessGroupNames.attribute] ?? unnamed ?? membership.defaultGroup
            if let scope = caller.scope {
                guard let placement = scope.placement(of: attributes) else {
                    return .failure(.forbidden("\(scope.identity) may create only the items its --allow names\(scope.group.map { " or items of \($0)" } ?? "")"))
                }
                group = placement
            } else if !(membership.groups.contains(group) || caller.allowedOnce.contains(group)) {
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

    /// Applies a consented change: to the policy file, then reloads it; or to the remembered
    /// consents of readers.
    func apply(_ change: PolicyChange) -> Result<Void, SecretServiceError> {
        if change.kind == .reader {
            guard let identity = CallerIdentity(parsing: change.identity) else { return .failure(.invalidArgs("“\(change.identity)” is not an identity")) }
            return change.add ? consents.allow(identity, reading: change.group) : consents.revoke(change.identity, reading: change.group).map { _ in }
        }
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

    /// Checks `password` against the login keyring's, through the keyring's throttle as
    /// unlocking does; the keyring's state does not change.
    func verifyLoginPassword(_ password: SecureBytes, completion: @escaping (Result<Void, SecretServiceError>) -> Void) {
        guard let login = try? keyring.collection(named: Self.loginName) else {
            return completion(.failure(.failed("there is no login keyring to check the password against")))
        }
        checkPassword(password, of: login, purpose: " for an access group change") { completion($0.map { _ in }) }
    }

    /// Whether `caller` is in `group` (nil: `default`), as a member or allowed once, whether
    /// or not it must still be allowed to read it (``ReaderConsents``): what it may know of the
    /// group's items, such as their labels in the audit trail.
    func isAllowedInto(_ caller: Caller, _ group: String?) -> Bool {
        let group = group ?? AccessGroupNames.defaultGroup
        return membership(caller).groups.contains(group) || caller.allowedOnce.contains(group)
    }

    /// Why `caller` may not read `group`'s secrets while the person has not allowed it
    /// (consent for new readers), and how to allow it.
    func consentMissing(_ caller: Caller, _ group: String) -> String {
        "\(caller.identity) may not read the secrets of the access group “\(group)” until you allow it: "
            + "unlock them where secretd can ask you, or run secretctl consent allow \(caller.identity) \(group)"
    }

    /// ``access(_:to:)`` with the caller's membership worked out once, for long item lists.
    private func access(_ caller: Caller, _ membership: AccessPolicy.Membership, to group: String?) -> ItemAccess {
        let group = group ?? AccessGroupNames.defaultGroup
        // A run sees its group whole; the items its allowances name, item by item (visibleItem).
        if let scope = caller.scope { return !scope.ended && scope.group == group ? .full : .hidden }
        if membership.groups.contains(group) || caller.allowedOnce.contains(group) {
            return consents.mustAsk(caller, about: group, in: policy) ? .askable : .full
        }
        if policy.group(group)?.ask == true { return .askable }
        return .hidden
    }

    /// Refuses labels and attribute sets beyond the daemon's limits.
    static func checkItemText(label: String, attributes: [String: String]) -> SecretServiceError? {
        if label.utf8.count > KeychainLimits.textSize { return .invalidArgs("the label is longer than \(KeychainLimits.textSize) bytes") }
        if attributes.count > KeychainLimits.attributeCount {
            return .invalidArgs("an item may have at most \(KeychainLimits.attributeCount) attributes")
        }
        if attributes.contains(where: { $0.key.utf8.count > KeychainLimits.textSize || $0.value.utf8.count > KeychainLimits.textSize }) {
            return .invalidArgs("attribute names and values must be at most \(KeychainLimits.textSize) bytes")
        }
        if attributes.reduce(0, { $0 + $1.key.utf8.count + $1.value.utf8.count }) > KeychainLimits.attributeBytes {
            return .invalidArgs("an item's attributes may take at most \(KeychainLimits.attributeBytes) bytes, names and values together")
        }
        return nil
    }

    /// The paths of `collection`'s items that `sender` may see: its `Items`.
    func visibleItemPaths(of collection: Store.CollectionRecord, for sender: String) throws(SecretServiceError) -> [String] {
        do throws(StoreError) {
            return visible(try keyring.search([:], in: collection), for: sender).map { ObjectPaths.item(collection.name, $0.0.id) }
        } catch {
            throw storeFailure(error)
        }
    }
}

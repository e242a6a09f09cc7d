import FoundationEssentials
import Synchronization

/// The rules one kind of item follows: which attributes place it, which identify it, and how
/// reads, writes and deletes find it. ``Keychain`` and ``InternetKeychain`` are thin layers on it.
///
/// Reads and deletes match like `secret-tool`: every given attribute must match, attributes not
/// given match anything. Writes match exactly (an attribute left out must be absent too), so a
/// write never changes an item that belongs to another key, and updates the item in place when
/// the key already exists.
struct ItemScope: Sendable {
    /// The `xdg:schema` written with new items.
    let schema: String
    /// Attributes every item of the scope has (service or server fields, access group).
    let base: [String: String]
    /// Every attribute name that identifies an item besides the account.
    let keyNames: [String]
    /// The attribute holding the account (`account`, or `user` for internet passwords).
    let accountName: String
    /// A second attribute the account is copied to and found by (Python keyring's `username`).
    let mirrorAccountName: String?
    /// The attribute reported as ``KeychainItem/service``.
    let serviceName: String
    /// The collection to write to and read from; `nil` writes to the default, reads from all.
    let collection: KeychainCollection?
    /// The label given to a new item when the caller gives none.
    let defaultLabel: @Sendable (_ account: String) -> String
    /// The accessibility class every write stores; nil stores none (the provider's default,
    /// or the access group's) and keeps an existing item's.
    var accessibility: KeychainAccessibility? = nil

    /// Serialises this process's writes, so concurrent writers of one key never create two items.
    private static let writeLock = Mutex(())

    // MARK: - Operations

    /// Reads the secret stored for `account` and converts it with `decode`; `nil` when absent.
    func read<T>(
        account: String, decode: (UnsafeRawBufferPointer, String) throws(KeychainError) -> T
    ) throws(KeychainError) -> T? {
        // The usual case, one unlocked item, in two calls; ranking, unlocking and the mirror
        // attribute need the general path below.
        if let value = try LibSecret.soleSecret(base.merging([accountName: account]) { $1 }, in: collection, decode) {
            return value
        }
        let found = try matches(for: account, options: .init(unlock: true, loadSecrets: true))
        guard let best = found.first else { return nil }
        if best.isLocked { throw .locked }
        guard let value = try best.withSecret(decode) else { throw .locked }
        return value
    }

    /// Stores `secret` for `account`, updating the existing item in place when there is one.
    ///
    /// A `nil` label or comment leaves an existing item's label or comment as it is.
    func write(
        account: String, secret: SecretBuffer, contentType: String, label: String?, comment: String?
    ) throws(KeychainError) {
        try Self.writeLock.withLock { _ throws(KeychainError) in
            let candidates = try matches(for: account, options: .init(unlock: true))
            var found = candidates.filter { isExactMatch($0.attributes, account: account) }
            if found.isEmpty, base[KeychainAttributeName.accessGroup] == nil {
                // A provider with access groups (secretd) may have placed this caller's items in
                // its own default group: when every candidate is in one group, those are ours.
                let groups = Set(candidates.map { $0.attributes[KeychainAttributeName.accessGroup] })
                if groups.count == 1, let group = groups.first, group != nil {
                    found = candidates.filter { isExactMatch($0.attributes, account: account, placedIn: group) }
                }
            }
            let attributes = attributesToWrite(account: account, comment: comment)
            guard let item = found.first else {
                try LibSecret.create(
                    attributes: attributes, label: label ?? defaultLabel(account), secret: secret,
                    contentType: contentType, in: collection)
                return
            }
            if item.isLocked { throw .locked }
            try item.setSecret(secret, contentType: contentType)
            let current = item.attributes
            let merged = current.merging(attributes) { _, new in new }
            if merged != current { try item.setAttributes(merged) }
            if let label, label != item.label { try item.setLabel(label) }
            for duplicate in found.dropFirst() { try duplicate.delete() }
        }
    }

    /// Deletes every item a read of `account` could return; `true` when there was one.
    func remove(account: String) throws(KeychainError) -> Bool {
        try Self.writeLock.withLock { _ throws(KeychainError) in
            let found = try matches(for: account, options: .init())
            for item in found { try item.delete() }
            return !found.isEmpty
        }
    }

    /// Deletes the items of `account` whose secret still equals `credential`'s password (git's
    /// "erase only what was rejected"); items holding another secret stay. Returns how many.
    func remove(account: String, ifSecretMatches credential: LoginCredential) throws(KeychainError) -> Int {
        try Self.writeLock.withLock { _ throws(KeychainError) in
            let found = try matches(for: account, options: .init(unlock: true, loadSecrets: true))
            var removed = 0
            for item in found where !item.isLocked {
                let same = try item.withSecret { bytes, _ in credential.hasPassword(bytes) }
                guard same == true else { continue }
                try item.delete()
                removed += 1
            }
            return removed
        }
    }

    /// Deletes every item of the scope; returns how many.
    func removeAll() throws(KeychainError) -> Int {
        try Self.writeLock.withLock { _ throws(KeychainError) in
            let found = try LibSecret.search(base, in: collection, options: .init())
                .filter { describe($0) != nil }
            for item in found { try item.delete() }
            return found.count
        }
    }

    /// Whether a read of `account` would find an item; never prompts.
    func contains(account: String) throws(KeychainError) -> Bool {
        try !matches(for: account, options: .init()).isEmpty
    }

    /// The attributes of the item a read of `account` would return; never prompts. Throws
    /// `.locked` when the item is locked and its provider seals attributes (secretd does;
    /// gnome-keyring shows them while locked).
    func item(account: String) throws(KeychainError) -> KeychainItem? {
        guard let best = try matches(for: account, options: .init()).first else { return nil }
        if Self.isSealed(best) { throw .locked }
        return describe(best)
    }

    /// Every item of the scope, sorted by service then account; never prompts. Throws `.locked`
    /// when some are locked with sealed attributes, rather than return a list without them.
    func items() throws(KeychainError) -> [KeychainItem] {
        var items: [KeychainItem] = []
        try forEachItemPage { page in items += page }
        return items.sorted { ($0.service, $0.account, $0.label) < ($1.service, $1.account, $1.label) }
    }

    /// ``items()`` handed to `body` a page at a time, in no order; throws `.locked` as it does,
    /// once it meets such an item (the pages handed before are then to be let go of).
    func forEachItemPage(_ body: ([KeychainItem]) throws(KeychainError) -> Void) throws(KeychainError) {
        try LibSecret.forEachSummaryPage(base, in: collection) { page throws(KeychainError) in
            if page.contains(where: Self.isSealed) { throw .locked }
            try body(page.compactMap(describe))
        }
    }

    /// A locked item whose provider shows no attributes until it is unlocked.
    private static func isSealed(_ item: some LibSecret.ItemProperties) -> Bool { item.isLocked && item.attributes.isEmpty }

    // MARK: - Matching

    /// Items for `account`, best first: exact key matches, then the most recently modified.
    /// Items other clients stored under the mirror attribute only are found when nothing else is.
    private func matches(for account: String, options: LibSecret.SearchOptions) throws(KeychainError)
        -> [LibSecret.Item]
    {
        var found = try LibSecret.search(
            base.merging([accountName: account]) { $1 }, in: collection, options: options)
        if found.isEmpty, let mirrorAccountName {
            found = try LibSecret.search(
                base.merging([mirrorAccountName: account]) { $1 }, in: collection, options: options
            ).filter { $0.attributes[accountName] == nil }
        }
        let ranked = found.map { item in
            (item: item, exact: isExactMatch(item.attributes, account: account), modified: item.modified,
             path: item.objectPath)
        }
        return ranked.sorted { lhs, rhs in
            if lhs.exact != rhs.exact { return lhs.exact }
            if lhs.modified != rhs.modified { return lhs.modified > rhs.modified }
            return lhs.path < rhs.path
        }.map(\.item)
    }

    /// Whether `attributes` carry exactly this scope's key for `account`; `placedIn` is the
    /// access group the provider put the item in when this scope names none.
    private func isExactMatch(_ attributes: [String: String], account: String, placedIn: String? = nil) -> Bool {
        let accountMatches =
            attributes[accountName] == account
            || (attributes[accountName] == nil && mirrorAccountName.map { attributes[$0] == account } == true)
        var expected = base
        if let placedIn { expected[KeychainAttributeName.accessGroup] = placedIn }
        return accountMatches && keyNames.allSatisfy { attributes[$0] == expected[$0] }
    }

    /// The attribute set a write stores.
    private func attributesToWrite(account: String, comment: String?) -> [String: String] {
        var attributes = base
        attributes[KeychainAttributeName.schema] = schema
        attributes[accountName] = account
        if let mirrorAccountName { attributes[mirrorAccountName] = account }
        if let comment { attributes[KeychainAttributeName.comment] = comment }
        if let accessibility { attributes[KeychainAttributeName.accessibility] = accessibility.name }
        return attributes
    }

    /// The public description of a found item; `nil` when it lacks the scope's attributes.
    private func describe(_ item: some LibSecret.ItemProperties) -> KeychainItem? {
        let attributes = item.attributes
        guard let service = attributes[serviceName],
            let account = attributes[accountName] ?? mirrorAccountName.flatMap({ attributes[$0] })
        else { return nil }
        return KeychainItem(
            service: service, account: account, label: item.label,
            comment: attributes[KeychainAttributeName.comment],
            accessGroup: attributes[KeychainAttributeName.accessGroup],
            accessibility: KeychainAccessibility(attributes: attributes),
            created: item.created, modified: item.modified, attributes: attributes,
            kind: schema == KeychainAttributeName.networkSchema ? .internetPassword : .genericPassword)
    }
}

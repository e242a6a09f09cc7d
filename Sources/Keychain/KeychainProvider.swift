import KeychainCore

/// Keyring control for this package's command line (`secretctl status`, `lock`, `unlock`):
/// not part of the library's public API yet.
package enum KeychainProvider {
    /// A keyring (collection) as the provider reports it.
    package struct Collection: Equatable, Sendable {
        /// Its D-Bus object path.
        package var path: String
        /// Its label.
        package var label: String
        /// Whether it is locked.
        package var isLocked: Bool
        /// How many items it holds.
        package var itemCount: Int
        /// Whether the `default` alias points at it.
        package var isDefault: Bool
    }

    /// Runs `body` with every call of the library going to the provider that owns `busName`
    /// instead of `org.freedesktop.secrets`, each on a connection of its own; for `secretctl
    /// import secret-service`, which reads from one provider and writes into another.
    package static func on<T>(busName: String, _ body: () throws(KeychainError) -> T) throws(KeychainError) -> T {
        let result: Result<T, KeychainError> = LibSecret.$busNameOverride.withValue(busName) {
            do throws(KeychainError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The provider's unique bus name and process id.
    package static func owner() throws(KeychainError) -> (name: String, pid: UInt32?) {
        try LibSecret.providerOwner()
    }

    /// The process ids of every connection that owns `org.freedesktop.secrets` or waits in line
    /// for it (`ListQueuedOwners`), the owner first; empty when it has no owner. Asks the bus
    /// daemon only, so it starts no provider.
    package static func claimants() throws(KeychainError) -> [UInt32] {
        try LibSecret.busNameClaimants(SecretServiceNames.busName)
    }

    /// Has the session bus daemon read its configuration and D-Bus activation files again
    /// (`ReloadConfig`), so that a changed activation file counts from the next activation.
    package static func reloadBusConfiguration() throws(KeychainError) {
        _ = try LibSecret.callBusDaemon("ReloadConfig")
    }

    /// One trivial round trip to the provider (`org.freedesktop.DBus.Peer.Ping`), the floor
    /// under every call, for benchmarks.
    package static func ping() throws(KeychainError) {
        try LibSecret.ping()
    }

    /// Every keyring of the provider.
    package static func collections() throws(KeychainError) -> [Collection] {
        try LibSecret.collections().map {
            Collection(path: $0.path, label: $0.label, isLocked: $0.isLocked, itemCount: $0.itemCount, isDefault: $0.isDefault)
        }
    }

    /// Locks the keyring behind `alias` (the default keyring when not given).
    package static func lock(alias: String = KeychainCollection.default.alias) throws(KeychainError) {
        try LibSecret.lock(alias: alias)
    }

    /// Locks every keyring so that nothing opens without a password or PIN, their
    /// after-first-unlock items too (which an ordinary lock leaves readable); secretd only.
    package static func lockAll() throws(KeychainError) {
        try LibSecret.lockAll()
    }

    /// Unlocks the keyring behind `alias` with `password`, or through the provider's prompt
    /// when `password` is nil. A wrong password is `.accessDenied`.
    package static func unlock(alias: String = KeychainCollection.default.alias, password: [UInt8]?) throws(KeychainError) {
        let buffer = password.map { bytes in bytes.withUnsafeBytes { SecretBuffer(copying: $0) } }
        try LibSecret.unlock(alias: alias, password: buffer)
    }

    /// Whether a keyring has `alias` (the default keyring when not given).
    package static func hasKeyring(alias: String = KeychainCollection.default.alias) throws(KeychainError) -> Bool {
        try LibSecret.hasCollection(alias: alias)
    }

    /// Creates the login keyring ("Login", with the `default` alias) under `password`, or
    /// through the provider's prompt when `password` is nil; it is unlocked afterwards.
    package static func createLoginKeyring(password: [UInt8]?) throws(KeychainError) {
        let buffer = password.map { bytes in bytes.withUnsafeBytes { SecretBuffer(copying: $0) } }
        try LibSecret.createCollection(alias: KeychainCollection.default.alias, label: "Login", password: buffer)
    }

    /// Changes the password of the keyring behind `alias`: from `current` to `new`, or through
    /// the provider's prompt when both are nil. A wrong current password is `.accessDenied`.
    package static func changePassword(
        alias: String = KeychainCollection.default.alias, current: [UInt8]?, new: [UInt8]?
    ) throws(KeychainError) {
        if let current, let new {
            let buffers = (
                current.withUnsafeBytes { SecretBuffer(copying: $0) }, new.withUnsafeBytes { SecretBuffer(copying: $0) }
            )
            try LibSecret.changePassword(alias: alias, passwords: (buffers.0, buffers.1))
        } else {
            try LibSecret.changePassword(alias: alias, passwords: nil)
        }
    }

    // MARK: - Access groups (secretd)

    /// Who secretd takes this process for, and the access groups it belongs to.
    package struct AccessIdentity: Equatable, Sendable {
        /// `flatpak:ID`, `snap:NAME`, `unit:NAME` or `exe:PATH`.
        package var identity: String
        /// Every group it belongs to.
        package var groups: [String]
        /// Where its items go when it names no group.
        package var defaultGroup: String
        /// Whether the policy confines it to its groups.
        package var confined: Bool
    }

    /// A group of secretd's access group policy.
    package struct AccessGroup: Equatable, Sendable {
        /// Its name.
        package var name: String
        /// Whether non-members may ask the person for access.
        package var ask: Bool
        /// Its members' identities.
        package var members: [String]
    }

    /// Whether the provider is secretd (it serves secretd's access group interface).
    package static func isSecretd() throws(KeychainError) -> Bool {
        do {
            _ = try LibSecret.whoAmI()
            return true
        } catch .notSupported {
            return false
        }
    }

    /// How secretd identifies this process, and its groups.
    package static func whoAmI() throws(KeychainError) -> AccessIdentity {
        let answer = try LibSecret.whoAmI()
        return AccessIdentity(
            identity: answer.identity, groups: answer.groups, defaultGroup: answer.defaultGroup, confined: answer.confined)
    }

    /// secretd's access groups, in the policy file's order, and its confined apps.
    package static func accessGroups() throws(KeychainError) -> (groups: [AccessGroup], apps: [String: [String]]) {
        let policy = try LibSecret.accessGroupPolicy()
        return (policy.groups.map { AccessGroup(name: $0.name, ask: $0.ask, members: $0.members) }, policy.apps)
    }

    // MARK: - Quick unlock with a PIN (secretd)

    /// Sets a PIN that unlocks the login keyring again after it locked, until secretd stops,
    /// 5 wrong PINs, or ``clearPin()``; the login `password` proves the person may.
    package static func setPin(_ pin: [UInt8], password: [UInt8]) throws(KeychainError) {
        let pinBuffer = pin.withUnsafeBytes { SecretBuffer(copying: $0) }
        let passwordBuffer = password.withUnsafeBytes { SecretBuffer(copying: $0) }
        try LibSecret.setPin(pinBuffer, password: passwordBuffer)
    }

    /// Forgets the PIN; false when none was set.
    package static func clearPin() throws(KeychainError) -> Bool { try LibSecret.clearPin() }

    /// Unlocks the login keyring with the PIN (``KeychainError/accessDenied(message:)`` when wrong).
    package static func unlock(pin: [UInt8]) throws(KeychainError) {
        try LibSecret.unlockWithPin(pin.withUnsafeBytes { SecretBuffer(copying: $0) })
    }

    /// Whether a PIN is set, and how many wrong PINs it still takes.
    package static func pinStatus() throws(KeychainError) -> (set: Bool, triesLeft: Int) { try LibSecret.pinStatus() }

    // MARK: - The TPM slot (secretd)

    /// The login keyring's TPM slot, as secretd reports it.
    package struct TPMStatus: Equatable, Sendable {
        /// Whether the keyring has one.
        package var enrolled: Bool
        /// The PCRs it is bound to.
        package var pcrs: [Int]
        /// The TCTI secretd reaches the TPM through (`default`: libtss2's choice).
        package var tcti: String
        /// Why the slot did not unlock the keyring at secretd's start; empty when it did.
        package var lastFailure: String
    }

    /// Seals the login keyring's key to the TPM (bound to `pcrs`, when any), so that secretd
    /// unlocks the keyring when it starts; the login `password` proves the person may.
    package static func enrollTPM(password: [UInt8], pcrs: [Int]) throws(KeychainError) {
        try LibSecret.enrollTPM(password.withUnsafeBytes { SecretBuffer(copying: $0) }, pcrs: pcrs)
    }

    /// Drops the TPM slot; false when there was none.
    package static func removeTPM() throws(KeychainError) -> Bool { try LibSecret.removeTPM() }

    /// The TPM slot's state.
    package static func tpmStatus() throws(KeychainError) -> TPMStatus { try LibSecret.tpmStatus() }

    // MARK: - Sync (secretd)

    /// A synced keyring's state, as secretd reports it.
    package struct SyncStatus: Sendable {
        /// The git remote.
        package var remote: String
        /// This machine's device id, and the code it shows while it waits for approval.
        package var device: String
        package var code: String
        /// Whether this machine still waits for another to approve it.
        package var waiting: Bool
        /// The vault's devices.
        package var devices: [String]
        /// The devices waiting for approval, with the code each shows.
        package var pending: [(device: String, code: String)]
        /// When the last round ended well (seconds since 1970; 0: never).
        package var lastSync: UInt64
        /// Why the last round failed (empty: it did not).
        package var lastError: String
        /// Local changes not yet published.
        package var unpublished: Int
        /// Merges so far that kept a losing version as history.
        package var conflictsResolved: Int
        /// Files the last round refused, and why.
        package var refused: [String]
    }

    /// What one round did.
    package struct SyncRound: Equatable, Sendable {
        package var published: Int
        package var received: Int
        package var conflicts: Int
        package var refused: [String]
    }

    /// A version of an item that lost a merge (its history).
    package struct SyncVersion: Equatable, Sendable {
        /// The entry's number (for restore).
        package var id: UInt64
        /// When it was made (milliseconds since 1970, as its device's clock said).
        package var madeAt: UInt64
        /// The device that made it.
        package var device: String
        /// Whether it deleted the item.
        package var deleted: Bool
        /// Its label.
        package var label: String
    }

    /// Starts syncing `keyring` through `remote` (a new vault there, or a request to join the
    /// one there when `joining`); returns this machine's device id and, when joining, its code.
    package static func startSync(keyring: String, remote: String, joining: Bool) throws(KeychainError) -> (device: String, code: String) {
        try LibSecret.startSync(keyring: keyring, remote: remote, joining: joining)
    }

    /// Approves waiting device `device`, whose screen shows `code`.
    package static func approveSyncDevice(_ device: String, code: String, keyring: String) throws(KeychainError) {
        try LibSecret.approveSyncDevice(device, code: code, keyring: keyring)
    }

    /// Removes `device` from the vault (and replaces the vault key, so it cannot read what is
    /// written from now on).
    package static func removeSyncDevice(_ device: String, keyring: String) throws(KeychainError) {
        try LibSecret.removeSyncDevice(device, keyring: keyring)
    }

    /// Stops syncing `keyring` on this machine (its items stay).
    package static func leaveSync(keyring: String) throws(KeychainError) { try LibSecret.leaveSync(keyring: keyring) }

    /// Makes version `version` of the item's history its contents again (a change that syncs).
    package static func restoreSyncVersion(_ version: UInt64, keyring: String, attributes: [String: String]) throws(KeychainError) {
        try LibSecret.restoreSyncVersion(version, keyring: keyring, attributes: attributes)
    }

    /// Runs a round now and waits for it.
    package static func syncNow(keyring: String) throws(KeychainError) -> SyncRound { try LibSecret.syncNow(keyring: keyring) }

    /// The sync state of `keyring`.
    package static func syncStatus(keyring: String) throws(KeychainError) -> SyncStatus { try LibSecret.syncStatus(keyring: keyring) }

    /// The history of the one item of `keyring` with `attributes`, oldest first.
    package static func syncHistory(keyring: String, attributes: [String: String]) throws(KeychainError) -> [SyncVersion] {
        try LibSecret.syncHistory(keyring: keyring, attributes: attributes)
    }

    // MARK: - App keys (secretd)

    /// A key secretd made for a sandboxed app through the desktop portal (the app's file
    /// keyring is encrypted with it). Its bytes never leave secretd except to the portal.
    package struct AppKey: Equatable, Sendable {
        /// The Flatpak app id.
        package var app: String
        /// The keyring that holds it.
        package var keyring: String
        /// When it was made (seconds since 1970).
        package var created: UInt64
    }

    /// Every app key secretd holds; the keyrings holding some must be unlocked
    /// (``KeychainError/locked``); another provider is ``KeychainError/notSupported(feature:)``.
    package static func appKeys() throws(KeychainError) -> [AppKey] {
        try LibSecret.appKeys().map { AppKey(app: $0.app, keyring: $0.keyring, created: $0.created) }.sorted { $0.app < $1.app }
    }

    /// Deletes the key of `app`; the app's stored secrets become unreadable. False when it had none.
    package static func deleteAppKey(_ app: String) throws(KeychainError) -> Bool {
        try LibSecret.deleteAppKey(app)
    }

    /// Hands `keyring` to secretd, which writes it whole or not at all into the keyring of its
    /// name (created with `password` when there is none; an existing one must be unlocked) and
    /// skips every item that keyring holds already with the same attributes and secret.
    /// Returns how many items were written and skipped; a provider other than secretd is
    /// ``KeychainError/notSupported(feature:)``.
    package static func importKeyring(_ keyring: ImportedKeyring, password: [UInt8]) throws(KeychainError) -> (imported: Int, skipped: Int) {
        let buffer = password.withUnsafeBytes { SecretBuffer(copying: $0) }
        return try LibSecret.importKeyring(keyring, password: buffer)
    }

    /// The whole keyring at `path` (a collection's object path), read through the Secret
    /// Service from any provider, to hand to ``importKeyring(_:password:)``; its name is the
    /// last part of the path. A locked keyring is unlocked through the provider's prompt first
    /// (a dismissed prompt is ``KeychainError/cancelled``).
    package static func readKeyring(at path: String) throws(KeychainError) -> ImportedKeyring {
        try LibSecret.readKeyring(at: path)
    }

    /// Adds `identity` to `group` (or removes it); the person consents with the login
    /// `password`, or through secretd's prompt when it is nil.
    package static func changeAccessGroup(add: Bool, group: String, identity: String, password: [UInt8]?) throws(KeychainError) {
        let buffer = password.map { bytes in bytes.withUnsafeBytes { SecretBuffer(copying: $0) } }
        try LibSecret.changeAccessGroup(add: add, group: group, identity: identity, password: buffer)
    }
}

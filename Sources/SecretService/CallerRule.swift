import KeychainCore

/// Who may call a method, or write a property, of an interface secretd serves.
///
/// Every method in ``Introspection/interfaces`` declares one (a method without a rule does not
/// compile), and the daemon checks it before any handler runs (``CallRouter/admit(_:)``), so a
/// handler never sees a call its rule refuses. secretd(1) lists every method with its rule
/// under ACCESS CONTROL; `CallerRuleTests` calls every declared method as each kind of client.
enum CallerRule: String, CaseIterable, Sendable {
    /// Every client of this user, confined and sandboxed ones too. What it reaches is still
    /// what its access groups let it see (searches, secrets, new items), and what it cannot
    /// do without the person (a new keyring, an unlock) goes through a prompt.
    case anyClient = "any client"
    /// The person's own tools only: clients that no `[app]` entry of `access-groups.conf`
    /// confines and that run outside a Flatpak or snap sandbox. Managing keyrings (delete,
    /// create with a password, aliases, labels, passwords, locking), the policy, app keys,
    /// the PIN, the TPM slot, sync and imports.
    case unconfined = "unconfined clients outside a sandbox"
    /// Clients in the access group of the item called; the item does not exist for others
    /// (`NoSuchObject`), and shows locked to clients that may ask the person for it.
    case itemGroup = "members of the item's access group"
    /// The client that opened the object: a session, a prompt, a portal request.
    case objectOwner = "the client that opened the object"
    /// The desktop portal's frontend, as `portal-frontends` in secretd.conf names it.
    case portalFrontend = "the desktop portal (portal-frontends)"

    /// Whether a client of this kind passes a rule that depends only on who it is
    /// (``anyClient``, ``unconfined``, ``portalFrontend``); the object rules are checked
    /// against the object called.
    static func isUnconfinedHost(_ identity: CallerIdentity, confined: Bool) -> Bool {
        !confined && identity.kind != .flatpak && identity.kind != .snap
    }
}

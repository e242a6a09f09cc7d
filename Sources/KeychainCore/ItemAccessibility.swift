// When an item can be read, as iOS's accessibility classes say it (kSecAttrAccessible…), for
// every part that spells them: the library (the attribute it writes), secretd (which key seals
// the item, and who may read it while the keyring is locked), secretctl (`--accessible`).
// One definition, so the three cannot drift.

/// An item's accessibility class, carried in the attribute ``attribute`` (absent: the default,
/// ``whenUnlocked``), so that secret-tool and other clients need not know of it.
package enum ItemAccessibility: String, CaseIterable, Sendable {
    /// Readable only while its keyring is unlocked (the default).
    case whenUnlocked = "when-unlocked"
    /// Readable also while its keyring is locked by idle time, suspend, the screen lock or an
    /// ordinary lock, once it has been unlocked since secretd started; `secretctl lock --all`
    /// and a restart lock it too.
    case afterFirstUnlock = "after-first-unlock"
    /// ``whenUnlocked``, and it never leaves this machine (export needs a flag; sync skips it).
    case whenUnlockedDeviceOnly = "when-unlocked-device-only"
    /// ``afterFirstUnlock``, and it never leaves this machine.
    case afterFirstUnlockDeviceOnly = "after-first-unlock-device-only"

    /// The attribute that names an item's class (documented in secretd(1)).
    package static let attribute = "keychain:accessible"

    /// The class an item with `attributes` has: the attribute's, else the default. An unknown
    /// value (only a file from elsewhere holds one; secretd refuses it on writes) reads as the
    /// default, the stricter class.
    package init(attributes: [String: String]) {
        self = attributes[Self.attribute].flatMap(Self.init(rawValue:)) ?? .whenUnlocked
    }

    /// Whether the item stays readable after a lock that is not `lock --all`.
    package var survivesLock: Bool { self == .afterFirstUnlock || self == .afterFirstUnlockDeviceOnly }

    /// Whether the item must stay on this machine.
    package var isDeviceOnly: Bool { self == .whenUnlockedDeviceOnly || self == .afterFirstUnlockDeviceOnly }

    /// The names, for help texts and error messages: `when-unlocked, after-first-unlock, …`.
    package static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

import KeychainCore

/// When an item can be read, as iOS's `kSecAttrAccessible…` classes say it. secretd enforces
/// it; other providers store it as the plain attribute `keychain:accessible`
/// (``KeychainAttributeName/accessibility``).
///
/// ```swift
/// // A mail sync that must keep working behind the locked screen:
/// let keychain = try Keychain(service: "com.example.mail", accessibility: .afterFirstUnlock)
/// ```
public enum KeychainAccessibility: Sendable, CaseIterable {
    /// Readable only while its keyring is unlocked (what an item without a class gets).
    case whenUnlocked
    /// Readable also while the keyring is locked by idle time, suspend, the screen lock or an
    /// ordinary lock, once it has been unlocked since secretd started; `secretctl lock --all`
    /// and a restart of secretd lock it too.
    case afterFirstUnlock
    /// ``whenUnlocked``, and it never leaves this machine (export asks for a flag; sync skips it).
    case whenUnlockedThisDeviceOnly
    /// ``afterFirstUnlock``, and it never leaves this machine.
    case afterFirstUnlockThisDeviceOnly

    /// The value stored in the `keychain:accessible` attribute (`after-first-unlock`, …).
    public var name: String { stored.rawValue }

    /// The class called `name` (`when-unlocked`, `after-first-unlock`,
    /// `when-unlocked-device-only`, `after-first-unlock-device-only`), or nil.
    public init?(name: String) {
        guard let stored = ItemAccessibility(rawValue: name) else { return nil }
        self.init(stored)
    }

    init(_ stored: ItemAccessibility) {
        switch stored {
        case .whenUnlocked: self = .whenUnlocked
        case .afterFirstUnlock: self = .afterFirstUnlock
        case .whenUnlockedDeviceOnly: self = .whenUnlockedThisDeviceOnly
        case .afterFirstUnlockDeviceOnly: self = .afterFirstUnlockThisDeviceOnly
        }
    }

    private var stored: ItemAccessibility {
        switch self {
        case .whenUnlocked: .whenUnlocked
        case .afterFirstUnlock: .afterFirstUnlock
        case .whenUnlockedThisDeviceOnly: .whenUnlockedDeviceOnly
        case .afterFirstUnlockThisDeviceOnly: .afterFirstUnlockDeviceOnly
        }
    }

    /// The class of an item with `attributes` (its attribute, else ``whenUnlocked``).
    init(attributes: [String: String]) { self.init(ItemAccessibility(attributes: attributes)) }
}

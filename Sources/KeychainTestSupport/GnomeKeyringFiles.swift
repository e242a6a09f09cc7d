public import Foundation

/// Keyring files that the real gnome-keyring-daemon wrote (scripts/make-gnome-keyrings.py),
/// made once per test process, with the manifest of what that daemon showed for them over D-Bus
/// after loading them again: a directory of `*.keyring` files and `default`.
public enum GnomeKeyringFiles {
    /// The files and their manifest (`keyrings`: file, name, password, format, header, items).
    public typealias Made = ScriptMadeFiles.Made

    private static let once = ScriptMadeFiles.make(script: "make-gnome-keyrings.py", directoryPrefix: "gnome-keyrings")

    /// The files, made on the first call.
    public static func made() throws -> Made { try once.get() }

    /// A copy of the files in `destination` (created), for a test that changes them.
    public static func copy(to destination: URL) throws -> Made { try ScriptMadeFiles.copy(made(), to: destination) }
}

extension ScriptMadeFiles.Made {
    /// The keyrings of a ``GnomeKeyringFiles`` manifest.
    public var keyrings: [[String: Any]] { manifest["keyrings"] as? [[String: Any]] ?? [] }
}

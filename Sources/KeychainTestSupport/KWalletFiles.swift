public import Foundation

/// Wallet files that the real kwalletd5 wrote (scripts/make-kwallets.py), made once per test
/// process, with the manifest of what a fresh kwalletd showed for them over D-Bus after loading
/// them again: a directory of `NAME.kwl`, `NAME.salt` and `NAME_attributes.json` files.
public enum KWalletFiles {
    /// The files and their manifest (`wallets`: name, file, password, header, folders,
    /// secret_service).
    public typealias Made = ScriptMadeFiles.Made

    private static let once = ScriptMadeFiles.make(script: "make-kwallets.py", directoryPrefix: "kwallets")

    /// The files, made on the first call.
    public static func made() throws -> Made { try once.get() }

    /// A copy of the files in `destination` (created), for a test that changes them.
    public static func copy(to destination: URL) throws -> Made { try ScriptMadeFiles.copy(made(), to: destination) }
}

extension ScriptMadeFiles.Made {
    /// The wallets of a ``KWalletFiles`` manifest.
    public var wallets: [[String: Any]] { manifest["wallets"] as? [[String: Any]] ?? [] }
}

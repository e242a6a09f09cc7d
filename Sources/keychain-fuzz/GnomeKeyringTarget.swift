import Foundation
import GnomeKeyringFormat
import SecretCrypto

/// `secretctl import gnome-keyring`: the reader of gnome-keyring's files, binary and key file.
/// The seeds are files the real gnome-keyring-daemon wrote (scripts/make-gnome-keyrings.py),
/// the encrypted one under ``password``.
enum GnomeKeyringTarget {
    /// The target.
    static let target = FuzzTarget(name: "gnome-keyring", summary: "gnome-keyring keyring files", maximumLength: 16384, run: run)

    /// The password of the encrypted seeds.
    static let password = SecureBytes(Array("work-pw".utf8))

    private static func run(_ data: Data) {
        let bytes = [UInt8](data)
        let count = GnomeKeyringFile.itemCount(bytes)
        guard let keyring = try? GnomeKeyringFile.read(bytes, name: "fuzz", password: password) else { return }
        if GnomeKeyringFile.isEncrypted(bytes) {
            require(count == keyring.items.count, "the header says \(count.map(String.init) ?? "nothing") items, \(keyring.items.count) were read")
        }
        let secretBytes = keyring.items.reduce(0) { $0 + $1.secret.count }
        require(secretBytes <= bytes.count, "\(secretBytes) bytes of secrets from a file of \(bytes.count)")
    }
}

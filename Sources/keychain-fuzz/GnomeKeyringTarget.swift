import Foundation
import GnomeKeyringFormat
import SecretCrypto

/// `secretctl import gnome-keyring` and `oo7`: the reader of gnome-keyring's files, binary and
/// key file, and of version 1 files (oo7, libsecret's file backend). The seeds are files the
/// real gnome-keyring-daemon wrote (scripts/make-gnome-keyrings.py) and a version 1 file
/// libsecret wrote (`secret-tool store` with `SECRET_BACKEND=file`, `SECRET_FILE_TEST_PATH` and
/// `SECRET_FILE_TEST_PASSWORD`: two items), the encrypted ones under ``password``.
enum GnomeKeyringTarget {
    /// The target.
    static let target = FuzzTarget(name: "gnome-keyring", summary: "gnome-keyring, oo7 and libsecret keyring files", maximumLength: 16384, run: run)

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

import Foundation
import SecretCtl
import SecretCrypto

/// `secretctl import FILE.kdbx`: a KeePass database's outer header, KDF parameters, MACs,
/// payload and inner header, opened with the password `fuzz` (the generated seeds use it)
/// under tiny key derivation limits; and, for any other input, the XML payload as it is once
/// decrypted (the XML reader and the mapping of entries to items).
enum KDBXImportTarget {
    /// The password of the seeds.
    static let password = Data("fuzz".utf8)

    /// The target.
    static let target = FuzzTarget(
        name: "kdbx-import", summary: "KeePass databases (KDBX header, KDF parameters, blocks; the XML payload)", maximumLength: 16384,
        run: run, generatedSeeds: seeds)

    /// Argon2 and AES-KDF work beyond these would only slow the search down.
    private static let limits = KDBXImport.Limits(argon2MemoryKiB: 1024, argon2Iterations: 2, aesRounds: 10_000)

    /// Databases that secretctl's export writes, under the cheapest parameters.
    private static func seeds() -> [(name: String, data: Data)] {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let entries = [
            KDBXExport.Entry(
                collection: "login", label: "Forge",
                attributes: ["xdg:schema": "org.gnome.keyring.NetworkPassword", "server": "git.example.org", "user": "clara", "protocol": "https",
                             "port": "8443", "notes": "two\nlines"],
                secret: Data("s3cr3t <&> ✓".utf8), created: now, modified: now),
            KDBXExport.Entry(
                collection: "work", label: "Router", attributes: ["xdg:schema": "org.freedesktop.Secret.Generic", "service": "router", "account": "admin"],
                secret: Data("pässwörd".utf8), created: now, modified: now),
        ]
        guard let database = try? KDBXExport.database(entries, passphrase: password, parameters: .testing) else {
            FileHandle.standardError.write(Data("keychain-fuzz: no kdbx-import seed\n".utf8))
            return []
        }
        return [("export.kdbx", Data(database.bytes))]
    }

    private static func run(_ data: Data) {
        if KDBXImport.isDatabase(data) {
            _ = try? KDBXImport.contents(data, key: KDBXImport.Key(password: password), limits: limits)
            return
        }
        guard let contents = try? KDBXImport.contents(xml: Array(data)) else { return }
        let again = try? KDBXImport.contents(xml: Array(data))
        require(again?.items == contents.items, "the same XML gives different items")
        for item in contents.items {
            require(item.attributes["xdg:schema"] != nil, "an item without a schema")
        }
    }
}

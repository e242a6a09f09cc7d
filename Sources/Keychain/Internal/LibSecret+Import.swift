// secretd's import interface (`io.github.secretd.Import1`), called over GDBus on libsecret's
// connection, its secrets encoded for libsecret's session.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// Errors that mean the provider has no import interface (gnome-keyring, KeePassXC).
    private static let noImport: Set<String> = [
        "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownObject",
    ]

    /// Sends a whole keyring to secretd's `ImportKeyring`, which writes it in one transaction
    /// into the keyring `keyring.name` (created under `password` when it does not exist) and
    /// skips each item it holds already. Returns the items written and skipped.
    static func importKeyring(_ keyring: ImportedKeyring, password: SecretBuffer) throws(KeychainError) -> (imported: Int, skipped: Int) {
        try withService { service throws(KeychainError) in
            let master = try encodedPassword(service, password)
            var children: [OpaquePointer?] = []
            for item in keyring.items {
                let properties = DBusValue.makeVariant(.properties([
                    SecretServiceNames.Property.itemLabel: .string(item.label),
                    SecretServiceNames.Property.itemAttributes: .stringMap(item.attributes),
                    "\(SecretServiceNames.Interface.item).Created": .uint64(item.created),
                    "\(SecretServiceNames.Interface.item).Modified": .uint64(item.modified),
                ]))
                let value = secretValue(item.secret, contentType: "text/plain")
                defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
                guard let secret = secret_service_encode_dbus_secret(service, value) else {  // floating
                    throw .protocolError(reason: "no session to send the secrets in")
                }
                children.append([Optional(properties), Optional(secret)].withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, 2) })
            }
            let type = g_variant_type_new("(a{sv}(oayays))")
            defer { g_variant_type_free(type) }
            let items = children.withUnsafeBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }!
            let properties = DBusValue.properties([
                SecretServiceNames.Property.collectionLabel: .string(keyring.label),
                "\(SecretServiceNames.Interface.collection).Created": .uint64(keyring.created),
                "\(SecretServiceNames.Interface.collection).Modified": .uint64(keyring.modified),
            ])
            guard let reply = try call(
                connection(of: service), interface: SecretServiceNames.Interface.importing, method: "ImportKeyring",
                arguments: [.string(keyring.name), properties], encoded: [master, items], absentWhen: noImport)
            else { throw .notSupported(feature: "importing keyrings (secretd has it)") }
            guard reply.count == 3, case .uint32(let imported) = reply[1], case .uint32(let skipped) = reply[2] else {
                throw .protocolError(reason: "the reply to ImportKeyring does not have the declared type")
            }
            return (Int(imported), Int(skipped))
        }
    }
}

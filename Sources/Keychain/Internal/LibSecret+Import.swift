// Moving keyrings between providers: reading one whole through the Secret Service (from
// gnome-keyring, KeePassXC or any provider), and secretd's import interface
// (`io.github.secretd.Import1`), called over GDBus on libsecret's connection, its secrets
// encoded for libsecret's session.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// Errors that mean the provider has no import interface (gnome-keyring, KeePassXC).
    private static let noImport: Set<String> = [
        "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownObject",
    ]

    /// Items as secretd's import calls take them, `a(a{sv}(oayays))` (a floating GVariant):
    /// `item(i)` gives the properties of the i-th and its secret value, which is encoded for
    /// libsecret's session and released here.
    static func encodedItems(
        _ service: UnsafeMutablePointer<SecretService>, count: Int,
        _ item: (Int) throws(KeychainError) -> (properties: [String: DBusValue], value: OpaquePointer)
    ) throws(KeychainError) -> OpaquePointer {
        var children: [OpaquePointer?] = []
        children.reserveCapacity(count)
        for index in 0..<count {
            let (properties, value) = try item(index)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            guard let secret = secret_service_encode_dbus_secret(service, value) else {  // floating
                throw .protocolError(reason: "no session to send the secrets in")
            }
            let tuple = [Optional(DBusValue.makeVariant(.properties(properties))), Optional(secret)]
            children.append(tuple.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, 2) })
        }
        let type = g_variant_type_new("(a{sv}(oayays))")
        defer { g_variant_type_free(type) }
        return children.withUnsafeBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }!
    }

    /// Sends a whole keyring to secretd's `ImportKeyring`, which writes it in one transaction
    /// into the keyring `keyring.name` (created under `password` when it does not exist) and
    /// skips each item it holds already. Returns the items written and skipped.
    static func importKeyring(_ keyring: ImportedKeyring, password: SecretBuffer) throws(KeychainError) -> (imported: Int, skipped: Int) {
        try withService { service throws(KeychainError) in
            let master = try encodedPassword(service, password)
            let items = try encodedItems(service, count: keyring.items.count) { index throws(KeychainError) in
                let item = keyring.items[index]
                return (
                    [
                        SecretServiceNames.Property.itemLabel: .string(item.label),
                        SecretServiceNames.Property.itemAttributes: .stringMap(item.attributes),
                        "\(SecretServiceNames.Interface.item).Created": .uint64(item.created),
                        "\(SecretServiceNames.Interface.item).Modified": .uint64(item.modified),
                    ], secretValue(item.secret, contentType: item.contentType)
                )
            }
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

    /// Reads the whole keyring at `path`: its label and times, and each item's label,
    /// attributes, times, secret and content type (all secrets in one `GetSecrets`). A locked
    /// keyring is unlocked first through the provider's prompt: `.cancelled` when it is
    /// dismissed, `.locked` when it stays locked.
    static func readKeyring(at path: String) throws(KeychainError) -> ImportedKeyring {
        try withService { service throws(KeychainError) in
            var error: UnsafeMutablePointer<GError>?
            let opened = secret_collection_new_for_dbus_path_sync(
                service, path, SECRET_COLLECTION_NONE, Cancellation.current, &error)  // transfer full
            if let error { throw takeError(error) }
            guard let collection = opened else { throw .protocolError(reason: "no keyring at \(path)") }
            defer { g_object_unref(collection) }
            if secret_collection_get_locked(collection) != 0 { try unlock(service, paths: [path]) }
            // Loaded after the unlock, so that no item proxy remembers it locked.
            _ = secret_collection_load_items_sync(collection, Cancellation.current, &error)
            if let error { throw takeError(error) }
            let items = adoptItems(secret_collection_get_items(collection))
            if !items.isEmpty {
                try withList(items) { list throws(KeychainError) in
                    var loadError: UnsafeMutablePointer<GError>?
                    _ = secret_item_load_secrets_sync(list, Cancellation.current, &loadError)
                    if let loadError { throw takeError(loadError) }
                }
            }
            var read: [ImportedKeyring.Item] = []
            for item in items {
                let copy = try item.withSecret { bytes, contentType throws(KeychainError) in
                    ImportedKeyring.Item(
                        label: item.label, attributes: item.attributes, secret: bytes, contentType: contentType,
                        created: UInt64(secret_item_get_created(item.pointer)), modified: UInt64(secret_item_get_modified(item.pointer)))
                }
                guard let copy else { throw .locked }  // the provider sent no secret for it
                read.append(copy)
            }
            let label = secret_collection_get_label(collection)
            defer { g_free(label) }
            return ImportedKeyring(
                name: String(path.split(separator: "/").last ?? ""), label: label.map { String(cString: $0) } ?? "",
                created: UInt64(secret_collection_get_created(collection)), modified: UInt64(secret_collection_get_modified(collection)),
                items: read)
        }
    }
}

// secretd's bulk calls (`io.github.secretd.Import1`'s ImportItems and ReadItems, issue 51 point
// 6), called over GDBus on libsecret's connection, their secrets in libsecret's session: a
// batch of items written in one transaction, and a page of items read in one call.

internal import CLibSecret
import DBusValues
import FoundationEssentials
import KeychainCore

extension LibSecret {
    /// Errors that mean the provider has no bulk interface (gnome-keyring, KeePassXC, an older
    /// secretd) or does not let this client use it (a confined one).
    private static let noBulk: Set<String> = [
        "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.AccessDenied",
        "org.freedesktop.Secret.Error.IsLocked", "org.freedesktop.Secret.Error.NoSuchObject",
    ]

    /// How many items a bulk call carries: one `ImportItems` transaction, one `ReadItems` reply.
    static let pageSize = 1000

    /// One item read by ``readItems(_:secrets:)``.
    struct BulkItem {
        var path: String
        var label: String
        var attributes: [String: String]
        var created: UInt64
        var modified: UInt64
        var isLocked: Bool
        var secret: Data?
    }

    /// Sends `items` (label, attributes, secret) to secretd's `ImportItems`, which writes them
    /// in one transaction into the keyring of `alias` (the default one when nil). Returns how
    /// many it wrote, replaced and skipped; nil when the provider has no such call, or the
    /// keyring is locked or missing (the caller then stores them one by one).
    static func importItems(_ items: [(label: String, attributes: [String: String], secret: Data)], alias: String?, replace: Bool)
        throws(KeychainError) -> (imported: Int, replaced: Int, skipped: Int)?
    {
        try withService { service throws(KeychainError) in
            let array = try encodedItems(service, count: items.count) { index throws(KeychainError) in
                let item = items[index]
                let contentType = String(data: item.secret, encoding: .utf8) != nil ? SecretCoding.textType : SecretCoding.binaryType
                return (
                    [
                        SecretServiceNames.Property.itemLabel: .string(item.label),
                        SecretServiceNames.Property.itemAttributes: .stringMap(item.attributes),
                    ], secretValue(try SecretCoding.buffer(item.secret), contentType: contentType)
                )
            }
            guard let reply = try call(
                connection(of: service), interface: SecretServiceNames.Interface.importing, method: "ImportItems",
                arguments: [.string(alias ?? ""), .boolean(replace)], encoded: [array], absentWhen: noBulk)
            else { return nil }
            guard reply.count == 3, case .uint32(let imported) = reply[0], case .uint32(let replaced) = reply[1],
                case .uint32(let skipped) = reply[2]
            else { throw .protocolError(reason: "the reply to ImportItems does not have the declared type") }
            return (Int(imported), Int(replaced), Int(skipped))
        }
    }

    /// The paths of every item with all of `attributes` (in the keyring of `alias`, or in all),
    /// unlocked ones first; nil when the alias is not set. One `SearchItems`.
    static func itemPaths(_ attributes: [String: String], alias: String?) throws(KeychainError) -> [String]? {
        try withService { service throws(KeychainError) -> [String]? in
            try searchPaths(service, attributes, alias: alias).map { $0.unlocked + $0.locked }
        }
    }

    /// One page of items read with secretd's `ReadItems`: label, attributes, times and, with
    /// `secrets`, each unlocked item's secret. nil when the provider has no such call.
    static func readItems(_ paths: [String], secrets: Bool) throws(KeychainError) -> [BulkItem]? {
        try withService { service throws(KeychainError) -> [BulkItem]? in try readItems(service, paths, secrets: secrets) }
    }

    /// ``readItems(_:secrets:)`` through `service`.
    static func readItems(_ service: UnsafeMutablePointer<SecretService>, _ paths: [String], secrets: Bool) throws(KeychainError)
        -> [BulkItem]?
    {
            var sessionPath = SecretServiceNames.Path.none
            if secrets {
                var error: UnsafeMutablePointer<GError>?
                _ = secret_service_ensure_session_sync(service, Cancellation.current, &error)
                if let error { throw takeError(error) }
                guard let path = secret_service_get_session_dbus_path(service) else {
                    throw .protocolError(reason: "no session to read the secrets in")
                }
                sessionPath = String(cString: path)
            }
            guard let reply = try call(
                connection(of: service), interface: SecretServiceNames.Interface.importing, method: "ReadItems",
                arguments: [.objectPaths(paths), .objectPath(sessionPath)], absentWhen: noBulk)
            else { return nil }
            guard reply.count == 1, case .dictionary("o", "a{sv}", let entries) = reply[0] else {
                throw .protocolError(reason: "the reply to ReadItems does not have the declared type")
            }
            var read: [String: BulkItem] = [:]
            for entry in entries {
                guard let path = entry.key.objectPath, let properties = entry.value.variantMap else { continue }
                var item = BulkItem(
                    path: path, label: properties["Label"]?.string ?? "", attributes: properties["Attributes"]?.stringMap ?? [:],
                    created: properties["Created"]?.uint64 ?? 0, modified: properties["Modified"]?.uint64 ?? 0,
                    isLocked: properties["Locked"]?.boolean ?? true, secret: nil)
                if let encoded = properties["Secret"] {
                    let variant = g_variant_ref_sink(DBusValue.makeVariant(encoded))
                    defer { g_variant_unref(variant) }
                    guard let value = secret_service_decode_dbus_secret(service, variant) else {  // transfer full
                        throw .protocolError(reason: "a secret that the session does not decode")
                    }
                    item.secret = try consume(value) { bytes, _ in Data(bytes) }
                }
                read[path] = item
            }
            // In the order asked for; an item gone meanwhile is left out.
            return paths.compactMap { read[$0] }
    }
}

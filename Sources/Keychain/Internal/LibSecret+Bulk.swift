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

    /// One item read by ``readPages(_:secrets:_:)``.
    struct BulkItem {
        var path: String
        var label: String
        var attributes: [String: String]
        var created: UInt64
        var modified: UInt64
        var isLocked: Bool
        var secret: Data?
    }

    /// One item for ``importItems(_:alias:replace:encoded:encodingMeanwhile:)``: label, attributes, secret.
    typealias ImportItem = (label: String, attributes: [String: String], secret: Data)

    /// A batch of items encoded for `ImportItems` with the session of one service.
    final class EncodedBatch: @unchecked Sendable {
        /// The `a(a{sv}(oayays))` argument.
        let items: OwnedVariant
        /// The service whose session encrypted the secrets, referenced while the batch lives
        /// (so that no later service can have its address).
        let service: UnsafeMutablePointer<SecretService>

        init(items: OwnedVariant, service: UnsafeMutablePointer<SecretService>) {
            self.items = items
            self.service = service
            g_object_ref(service)
        }

        deinit { g_object_unref(service) }
    }

    /// `items` encoded for `ImportItems` with `service`'s session.
    static func encodedBatch(_ items: [ImportItem], _ service: UnsafeMutablePointer<SecretService>) throws(KeychainError)
        -> EncodedBatch
    {
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
        return EncodedBatch(items: OwnedVariant(sinking: array), service: service)
    }

    /// Sends `items` to secretd's `ImportItems`, which writes them in one transaction into the
    /// keyring of `alias` (the default one when nil), and meanwhile encodes `next` (when given)
    /// with the same session. `encoded` is the encoding of `items` made that way during the
    /// call before, sent if its service is still the one in use. Returns how many secretd
    /// wrote, replaced and skipped (nil when the provider has no such call, or the keyring is
    /// locked or missing: the caller then stores them one by one) and the encoding of `next`.
    static func importItems(
        _ items: [ImportItem], alias: String?, replace: Bool, encoded: EncodedBatch? = nil, encodingMeanwhile next: [ImportItem]?
    ) throws(KeychainError) -> (counts: (imported: Int, replaced: Int, skipped: Int)?, next: EncodedBatch?) {
        try withService { service throws(KeychainError) in
            let batch: EncodedBatch
            if let encoded, encoded.service == service { batch = encoded } else { batch = try encodedBatch(items, service) }
            let connection = connection(of: service)
            let call = Prefetch(named: "secretctl-import") { () throws(KeychainError) -> OwnedVariant? in
                try callForReply(
                    connection, interface: SecretServiceNames.Interface.importing, method: "ImportItems",
                    arguments: [.string(alias ?? ""), .boolean(replace)], encoded: [batch.items.pointer], absentWhen: noBulk)
            }
            // A batch that does not encode is left for its own turn, which reports it.
            let nextBatch = next.flatMap { next in try? encodedBatch(next, service) }
            guard let reply = try call.value() else { return (nil, nextBatch) }
            guard let values = DBusValue.makeValue(reply.pointer)?.tuple, values.count == 3,
                case .uint32(let imported) = values[0], case .uint32(let replaced) = values[1], case .uint32(let skipped) = values[2]
            else { throw .protocolError(reason: "the reply to ImportItems does not have the declared type") }
            return ((Int(imported), Int(replaced), Int(skipped)), nextBatch)
        }
    }

    /// The paths of every item with all of `attributes` (in the keyring of `alias`, or in all),
    /// unlocked ones first; nil when the alias is not set. One `SearchItems`.
    static func itemPaths(_ attributes: [String: String], alias: String?) throws(KeychainError) -> [String]? {
        try withService { service throws(KeychainError) -> [String]? in
            try searchPaths(service, attributes, alias: alias).map { $0.unlocked + $0.locked }
        }
    }

    /// Reads the items at `paths` with secretd's `ReadItems`, ``pageSize`` a call (label,
    /// attributes, times and, with `secrets`, each unlocked item's secret), and hands each page
    /// to `body`, in order. The call for the next page is under way while the reply before is
    /// read and handed. Returns false, having handed nothing, when the provider has no such
    /// call; a provider that stops answering it midway is an error.
    static func readPages(_ paths: [String], secrets: Bool, _ body: ([BulkItem]) throws(KeychainError) -> Void)
        throws(KeychainError) -> Bool
    {
        var handed = 0  // a retry on a fresh connection goes on from the first page not handed
        return try withService { service throws(KeychainError) -> Bool in
            try readPages(service, paths, secrets: secrets, handed: &handed, body)
        }
    }

    /// ``readPages(_:secrets:_:)`` through `service`, from page `handed` on, counting in
    /// `handed` the pages handed to `body`.
    static func readPages(
        _ service: UnsafeMutablePointer<SecretService>, _ paths: [String], secrets: Bool, handed: inout Int,
        _ body: ([BulkItem]) throws(KeychainError) -> Void
    ) throws(KeychainError) -> Bool {
        let pages = stride(from: 0, to: paths.count, by: pageSize).map { Array(paths[$0..<min(paths.count, $0 + pageSize)]) }
        guard handed < pages.count else { return true }
        let sessionPath = secrets ? try sessionPath(service) : SecretServiceNames.Path.none
        let connection = connection(of: service)
        func reading(_ index: Int) -> Prefetch<OwnedVariant?> {
            Prefetch(named: "secretctl-read") { () throws(KeychainError) -> OwnedVariant? in
                try callForReply(
                    connection, interface: SecretServiceNames.Interface.importing, method: "ReadItems",
                    arguments: [.objectPaths(pages[index]), .objectPath(sessionPath)], absentWhen: noBulk)
            }
        }
        var next = reading(handed)
        while handed < pages.count {
            let reply = try next.value()
            if handed + 1 < pages.count { next = reading(handed + 1) }
            guard let reply else {
                if handed == 0 { return false }
                throw .protocolError(reason: "the provider stopped answering ReadItems")
            }
            try body(try bulkItems(in: reply, asked: pages[handed], service))
            handed += 1
        }
        return true
    }

    /// The D-Bus path of libsecret's session with the provider, opened if need be.
    private static func sessionPath(_ service: UnsafeMutablePointer<SecretService>) throws(KeychainError) -> String {
        var error: UnsafeMutablePointer<GError>?
        _ = secret_service_ensure_session_sync(service, Cancellation.current, &error)
        if let error { throw takeError(error) }
        guard let path = secret_service_get_session_dbus_path(service) else {
            throw .protocolError(reason: "no session to read the secrets in")
        }
        return String(cString: path)
    }

    /// The items of a `ReadItems` reply (`(a{oa{sv}})`), read in place, in the order of
    /// `asked`; an item gone meanwhile is left out. Each secret is decoded with `service`'s
    /// session.
    private static func bulkItems(in reply: OwnedVariant, asked: [String], _ service: UnsafeMutablePointer<SecretService>)
        throws(KeychainError) -> [BulkItem]
    {
        guard reply.isOfType("(a{oa{sv}})") else {
            throw .protocolError(reason: "the reply to ReadItems does not have the declared type")
        }
        let entries = g_variant_get_child_value(reply.pointer, 0)!
        defer { g_variant_unref(entries) }
        var read: [String: BulkItem] = [:]
        read.reserveCapacity(Int(g_variant_n_children(entries)))
        for index in 0..<g_variant_n_children(entries) {
            let entry = g_variant_get_child_value(entries, index)!
            defer { g_variant_unref(entry) }
            let path = string(child: 0, of: entry)
            let properties = g_variant_get_child_value(entry, 1)!
            defer { g_variant_unref(properties) }
            var item = BulkItem(path: path, label: "", attributes: [:], created: 0, modified: 0, isLocked: true, secret: nil)
            for propertyIndex in 0..<g_variant_n_children(properties) {
                let property = g_variant_get_child_value(properties, propertyIndex)!
                defer { g_variant_unref(property) }
                let boxed = g_variant_get_child_value(property, 1)!
                let value = g_variant_get_variant(boxed)!
                g_variant_unref(boxed)
                defer { g_variant_unref(value) }
                let type = String(cString: g_variant_get_type_string(value))
                switch (string(child: 0, of: property), type) {
                case ("Label", "s"): item.label = String(cString: g_variant_get_string(value, nil))
                case ("Attributes", "a{ss}"): item.attributes = stringMap(value)
                case ("Created", "t"): item.created = UInt64(g_variant_get_uint64(value))
                case ("Modified", "t"): item.modified = UInt64(g_variant_get_uint64(value))
                case ("Locked", "b"): item.isLocked = g_variant_get_boolean(value) != 0
                case ("Secret", "(oayays)"):
                    guard let secret = secret_service_decode_dbus_secret(service, value) else {  // transfer full
                        throw .protocolError(reason: "a secret that the session does not decode")
                    }
                    item.secret = try consume(secret) { bytes, _ in Data(bytes) }
                default: continue  // a property this client does not know
                }
            }
            read[path] = item
        }
        return asked.compactMap { read[$0] }
    }

    /// The string (or object path) that is child `index` of the container `variant`.
    private static func string(child index: Int, of variant: OpaquePointer) -> String {
        let child = g_variant_get_child_value(variant, gsize(index))!
        defer { g_variant_unref(child) }
        return String(cString: g_variant_get_string(child, nil))
    }

    /// The `a{ss}` `variant` as a dictionary.
    private static func stringMap(_ variant: OpaquePointer) -> [String: String] {
        let count = g_variant_n_children(variant)
        var map: [String: String] = [:]
        map.reserveCapacity(Int(count))
        for index in 0..<count {
            let entry = g_variant_get_child_value(variant, index)!
            defer { g_variant_unref(entry) }
            map[string(child: 0, of: entry)] = string(child: 1, of: entry)
        }
        return map
    }
}

// secretd's bulk calls (`io.github.secretd.Import1`'s ImportPackedItems and ReadPackedItems,
// or an older secretd's ImportItems and ReadItems, issue 51 point 6), called over GDBus on libsecret's connection, their secrets in libsecret's session: a
// page of items read in one call here, a batch of items written in one transaction in
// ``LibSecret/ImportBatch``.

internal import CLibSecret
import DBusValues
import FoundationEssentials
import KeychainCore

extension LibSecret {
    /// Errors that mean the provider has no bulk interface (gnome-keyring, KeePassXC, an older
    /// secretd) or does not let this client use it (a confined one).
    static let noBulk: Set<String> = [
        unknownMethod, "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.AccessDenied",
        "org.freedesktop.Secret.Error.IsLocked", "org.freedesktop.Secret.Error.NoSuchObject",
    ]

    /// The error of a provider without the method called: for a packed call, an older secretd.
    static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"

    /// Calls the packed bulk call `method` of `Import1` with `arguments` and `packed` after them;
    /// where secretd has no such method (one before it), `older` instead, its reply then
    /// `.values`. nil when the provider has no bulk call at all (``noBulk``).
    static func callPacked(
        _ connection: OpaquePointer?, method: String, arguments: [DBusValue], older: () throws(KeychainError) -> OwnedVariant?
    ) throws(KeychainError) -> BulkReply? {
        switch try callOutcome(connection, interface: SecretServiceNames.Interface.importing, method: method, arguments: arguments, absentWhen: noBulk) {
        case .reply(let reply): return .packed(reply)
        case .absent(let error) where error != unknownMethod: return nil
        case .absent: return try older().map { .values($0) }
        }
    }

    /// A bulk call's reply: the packed call's, or the older call's.
    enum BulkReply {
        case packed(OwnedVariant)
        case values(OwnedVariant)
    }

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

    /// The paths of every item with all of `attributes` (in the keyring of `alias`, or in all),
    /// unlocked ones first; nil when the alias is not set. One `SearchItems`.
    static func itemPaths(_ attributes: [String: String], alias: String?) throws(KeychainError) -> [String]? {
        try withService { service throws(KeychainError) -> [String]? in
            try searchPaths(service, attributes, alias: alias).map { $0.unlocked + $0.locked }
        }
    }

    /// Reads the items at `paths` with secretd's `ReadPackedItems` (an older secretd's
    /// `ReadItems`), ``pageSize`` a call (label,
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
        var packed = true  // until the provider turns out to have no ReadPackedItems
        func reading(_ index: Int) -> Prefetch<BulkReply?> {
            let tryPacked = packed
            return Prefetch(named: "secretctl-read") { () throws(KeychainError) -> BulkReply? in
                let arguments: [DBusValue] = [.objectPaths(pages[index]), .objectPath(sessionPath)]
                func older() throws(KeychainError) -> OwnedVariant? {
                    try callForReply(
                        connection, interface: SecretServiceNames.Interface.importing, method: "ReadItems", arguments: arguments,
                        absentWhen: noBulk)
                }
                guard tryPacked else { return try older().map { .values($0) } }
                return try callPacked(connection, method: readPackedMethod, arguments: arguments, older: older)
            }
        }
        var next = reading(handed)
        while handed < pages.count {
            let reply = try next.value()
            if case .values = reply { packed = false }
            if handed + 1 < pages.count { next = reading(handed + 1) }
            switch reply {
            case nil:
                if handed == 0 { return false }
                throw .protocolError(reason: "the provider stopped answering ReadItems")
            case .packed(let reply): try body(try bulkItems(packed: reply, asked: pages[handed], service))
            case .values(let reply): try body(try bulkItems(in: reply, asked: pages[handed], service))
            }
            handed += 1
        }
        return true
    }

    /// The packed call's name; a test names one secretd does not have, to take the fallback.
    #if DEBUG
    nonisolated(unsafe) static var readPackedMethod = "ReadPackedItems"
    #else
    static let readPackedMethod = "ReadPackedItems"
    #endif

    /// The items of a `ReadPackedItems` reply (`(ay)`, ``PackedItems/unpackRead(_:)``), in the
    /// order of `asked`; an item gone meanwhile is left out. Each secret is decoded with
    /// `service`'s session.
    private static func bulkItems(packed reply: OwnedVariant, asked: [String], _ service: UnsafeMutablePointer<SecretService>)
        throws(KeychainError) -> [BulkItem]
    {
        guard reply.isOfType("(ay)") else {
            throw .protocolError(reason: "the reply to ReadPackedItems does not have the declared type")
        }
        let array = g_variant_get_child_value(reply.pointer, 0)!
        defer { g_variant_unref(array) }
        var count: gsize = 0
        let base = g_variant_get_fixed_array(array, &count, 1)
        let (sessionPath, items): (String, [PackedItems.ReadItem])
        do {
            (sessionPath, items) = try PackedItems.unpackRead(DBusBytes(copying: UnsafeRawBufferPointer(start: base, count: Int(count))))
        } catch {
            throw .protocolError(reason: "the reply to ReadPackedItems: \(error.description)")
        }
        var read: [String: BulkItem] = [:]
        read.reserveCapacity(items.count)
        for item in items {
            var bulk = BulkItem(
                path: item.path, label: item.label, attributes: item.attributes, created: item.created, modified: item.modified,
                isLocked: item.isLocked, secret: nil)
            if let (parameters, value, contentType) = item.secret {
                let encoded = OwnedVariant(sinking: DBusValue.makeVariant(
                    .tuple([.objectPath(sessionPath), .bytes(parameters), .bytes(value), .string(contentType)])))
                guard let secret = secret_service_decode_dbus_secret(service, encoded.pointer) else {  // transfer full
                    throw .protocolError(reason: "a secret that the session does not decode")
                }
                bulk.secret = try consume(secret) { bytes, _ in Data(bytes) }
            }
            read[item.path] = bulk
        }
        return asked.compactMap { read[$0] }
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

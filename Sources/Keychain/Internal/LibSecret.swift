// The only file that calls libsecret (and the GLib functions its API needs).
// Ownership of every returned C object is noted next to the call ("transfer full" = ours to free).

internal import CLibSecret
import KeychainCore
import FoundationEssentials
import Glibc

/// Thin, typed wrappers over libsecret's synchronous item API.
///
/// Every function blocks the calling thread for one or more D-Bus round trips (and for as long
/// as an unlock prompt stays open), so the async API runs them on a dedicated thread.
enum LibSecret {
    /// Where a search looks and what it does with locked items.
    struct SearchOptions {
        /// Ask the provider to unlock locked matches (this may show a prompt).
        var unlock = false
        /// Fetch the secrets of the matches along with their attributes.
        var loadSecrets = false
    }

    // MARK: - Operations

    /// Items whose attributes include all of `attributes`, in `collection` or in all collections.
    ///
    /// The corresponding libsecret functions are `secret_service_search_sync`,
    /// `secret_service_unlock_sync` and `secret_item_load_secrets_sync`.
    static func search(
        _ attributes: [String: String], in collection: KeychainCollection?, options: SearchOptions
    ) throws(KeychainError) -> [Item] {
        try withService { service throws(KeychainError) in
            // Searching a whole collection through a collection proxy would load the paths of all
            // its items first; search the service and keep the collection's items instead.
            var prefix: String?
            if let collection {
                guard let path = try readAlias(service, collection.alias) else { return [] }
                prefix = path + "/"
            }
            var flags = SECRET_SEARCH_ALL.rawValue
            if prefix == nil && options.unlock { flags |= SECRET_SEARCH_UNLOCK.rawValue }
            if prefix == nil && options.loadSecrets { flags |= SECRET_SEARCH_LOAD_SECRETS.rawValue }
            let table = HashTable(attributes)
            var error: UnsafeMutablePointer<GError>?
            // transfer full: the list and its items are ours
            let list = secret_service_search_sync(service, nil, table.pointer, SecretSearchFlags(rawValue: flags), Cancellation.current, &error)
            if let error { throw takeError(error) }
            var items = adoptItems(list)
            if let prefix {
                items = items.filter { $0.objectPath.hasPrefix(prefix) }
                if options.unlock, items.contains(where: \.isLocked) { try unlock(service, items) }
                if options.loadSecrets { try loadSecrets(items) }
            }
            return items
        }
    }

    /// The items whose attributes include all of `attributes` (in `collection`, or in all),
    /// with their properties but not their secrets, and with no item proxy; never unlocks or
    /// prompts. An item deleted between the search and the reading of its properties is left out.
    ///
    /// One `SearchItems`, then one `Properties.GetAll` per item, one after the other.
    /// `secret_service_search_sync` builds an item proxy per match instead, all of them at
    /// once, and with thousands of items the client spends its time in GLib's main loop walking
    /// them (`secretctl list` over 3,000 items on secretd: 3.9–4.2 s that way, 1.5–1.8 s this way).
    ///
    /// The corresponding libsecret function is `secret_service_search_for_dbus_paths_sync`.
    static func summaries(_ attributes: [String: String], in collection: KeychainCollection?) throws(KeychainError)
        -> [ItemSummary]
    {
        try withService { service throws(KeychainError) -> [ItemSummary] in
            guard let found = try searchPaths(service, attributes, in: collection) else { return [] }
            let paths = found.unlocked + found.locked
            let bus = connection(of: service)
            var summaries: [ItemSummary] = []
            summaries.reserveCapacity(paths.count)
            for path in paths {
                if let summary = try itemSummary(bus, path: path) { summaries.append(summary) }
            }
            return summaries
        }
    }

    /// The properties of the item at `path`, as ``summaries(_:in:)`` reads each; nil when there
    /// is none.
    static func summary(at path: String) throws(KeychainError) -> ItemSummary? {
        try withService { service throws(KeychainError) in
            try itemSummary(connection(of: service), path: path)
        }
    }

    /// One item's properties (`Properties.GetAll`); nil when the item no longer exists (an
    /// error saying so, or no `Locked` property).
    private static func itemSummary(_ connection: OpaquePointer?, path: String) throws(KeychainError) -> ItemSummary? {
        var interface = g_variant_new_string("org.freedesktop.Secret.Item")  // floating, taken by the tuple
        let parameters = g_variant_new_tuple(&interface, 1)  // floating, taken by the call
        var error: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_sync(
            connection, "org.freedesktop.secrets", path, "org.freedesktop.DBus.Properties", "GetAll", parameters,
            nil, G_DBUS_CALL_FLAGS_NONE, -1, Cancellation.current, &error)  // transfer full
        if let error {
            let name = g_dbus_error_get_remote_error(error).map { remote in
                defer { g_free(remote) }
                return String(cString: remote)
            }
            if let name, ItemSummary.vanishedErrors.contains(name) {
                g_error_free(error)
                return nil
            }
            throw takeError(error)
        }
        guard let reply else { return nil }
        defer { g_variant_unref(reply) }
        guard String(cString: g_variant_get_type_string(reply)) == "(a{sv})",
            let properties = g_variant_get_child_value(reply, 0)
        else { throw .unexpectedData(reason: "the provider answered GetAll for \(path) with the wrong type") }
        defer { g_variant_unref(properties) }
        func value(_ name: String, _ type: String) -> OpaquePointer? {
            guard let value = g_variant_lookup_value(properties, name, nil) else { return nil }  // transfer full
            if String(cString: g_variant_get_type_string(value)) == type { return value }
            g_variant_unref(value)
            return nil
        }
        // Every item has `Locked`. A provider that leaves `GetAll` to GDBus answers it on a path
        // with no item with no properties rather than an error (GDBus skips each property that
        // fails to read); secretd did until it answered `GetAll` itself.
        guard let isLocked = value("Locked", "b") else { return nil }
        var summary = ItemSummary(objectPath: path)
        summary.isLocked = g_variant_get_boolean(isLocked) != 0
        g_variant_unref(isLocked)
        if let label = value("Label", "s") {
            summary.label = String(cString: g_variant_get_string(label, nil))
            g_variant_unref(label)
        }
        if let entries = value("Attributes", "a{ss}") {
            for index in 0..<g_variant_n_children(entries) {
                let entry = g_variant_get_child_value(entries, index)!
                summary.attributes[string(entry, 0)] = string(entry, 1)
                g_variant_unref(entry)
            }
            g_variant_unref(entries)
        }
        if let created = value("Created", "t") {
            summary.created = Date(timeIntervalSince1970: TimeInterval(g_variant_get_uint64(created)))
            g_variant_unref(created)
        }
        if let modified = value("Modified", "t") {
            summary.modified = Date(timeIntervalSince1970: TimeInterval(g_variant_get_uint64(modified)))
            g_variant_unref(modified)
        }
        return summary
    }

    /// When exactly one item matches `attributes` (in `collection`, or in any) and it is
    /// unlocked, hands its secret and content type to `body`, with no item proxy: one
    /// `SearchItems` and one `GetSecrets`, as `secret-tool lookup` makes them. `nil` in every
    /// other case (none, several, locked, or the item went meanwhile): the caller then takes
    /// the general path, which ranks, unlocks and prompts.
    ///
    /// The corresponding libsecret functions are `secret_service_search_for_dbus_paths_sync`
    /// and `secret_service_get_secret_for_dbus_path_sync`.
    static func soleSecret<T>(
        _ attributes: [String: String], in collection: KeychainCollection?,
        _ body: (UnsafeRawBufferPointer, String) throws(KeychainError) -> T
    ) throws(KeychainError) -> T? {
        try withService { service throws(KeychainError) -> T? in
            guard let found = try searchPaths(service, attributes, in: collection),
                found.unlocked.count == 1, found.locked.isEmpty
            else { return nil }
            var error: UnsafeMutablePointer<GError>?
            let value = secret_service_get_secret_for_dbus_path_sync(service, found.unlocked[0], Cancellation.current, &error)  // transfer full
            if let error {
                let failure = takeError(error)
                if failure == .locked { return nil }
                throw failure
            }
            guard let value else { return nil }
            return try consume(value, body)
        }
    }

    /// The object paths of the unlocked and of the locked items whose attributes include all of
    /// `attributes`, in `collection` or in all; nil when the collection's alias is not set.
    /// One `SearchItems` (`secret_service_search_for_dbus_paths_sync`).
    private static func searchPaths(
        _ service: UnsafeMutablePointer<SecretService>, _ attributes: [String: String], in collection: KeychainCollection?
    ) throws(KeychainError) -> (unlocked: [String], locked: [String])? {
        let table = HashTable(attributes)
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var error: UnsafeMutablePointer<GError>?
        _ = secret_service_search_for_dbus_paths_sync(
            service, nil, table.pointer, Cancellation.current, &unlocked, &locked, &error)  // transfer full
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
        }
        if let error { throw takeError(error) }
        guard let collection else { return (strings(unlocked), strings(locked)) }
        guard let path = try readAlias(service, collection.alias) else { return nil }
        let inCollection = { (item: String) in item.hasPrefix(path + "/") }
        return (strings(unlocked).filter(inCollection), strings(locked).filter(inCollection))
    }

    /// The D-Bus connection of libsecret's service proxy (not ours to unref), for the calls
    /// libsecret has no function for.
    private static func connection(of service: UnsafeMutablePointer<SecretService>) -> OpaquePointer? {
        g_dbus_proxy_get_connection(UnsafeMutableRawPointer(service).assumingMemoryBound(to: GDBusProxy.self))
    }

    /// The strings of a NULL-terminated `gchar**` (not consumed).
    private static func strings(_ vector: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
        guard let vector else { return [] }
        var result: [String] = []
        var index = 0
        while let string = vector[index] {
            result.append(String(cString: string))
            index += 1
        }
        return result
    }

    /// Creates an item in `collection` (the default collection when `nil`).
    ///
    /// No provider-side "replace" is asked for: gnome-keyring replaces any item whose attributes
    /// include the new ones, which would overwrite an item of another key. A locked collection
    /// is unlocked (which may show a prompt) and the call retried once; a missing default
    /// collection is created (which may prompt for its password), as libsecret's own store does.
    ///
    /// The corresponding libsecret functions are `secret_service_create_item_dbus_path_sync`,
    /// `secret_service_read_alias_dbus_path_sync`, `secret_service_unlock_dbus_paths_sync` and
    /// `secret_service_create_collection_dbus_path_sync`.
    static func create(
        attributes: [String: String], label: String, secret: SecretBuffer, contentType: String,
        in collection: KeychainCollection?
    ) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let alias = (collection ?? .default).alias
            let path: String
            if let found = try readAlias(service, alias) {
                path = found
            } else if alias == KeychainCollection.default.alias {
                path = try createDefaultCollection(service)
            } else {
                throw missingAlias(alias)
            }
            let properties = PropertyTable(label: label, attributes: attributes)
            let value = secretValue(secret, contentType: contentType)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            func attempt() -> KeychainError? {
                var error: UnsafeMutablePointer<GError>?
                let item = secret_service_create_item_dbus_path_sync(
                    service, path, properties.pointer, value, SECRET_ITEM_CREATE_NONE, Cancellation.current, &error)
                g_free(item)
                return error.map(takeError)
            }
            if let failure = attempt() {
                guard failure == .locked else { throw failure }
                try unlock(service, paths: [path])
                if let again = attempt() { throw again }
            }
        }
    }

    /// The object path an alias points at, or nil (`secret_service_read_alias_dbus_path_sync`).
    private static func readAlias(_ service: UnsafeMutablePointer<SecretService>, _ alias: String) throws(KeychainError)
        -> String?
    {
        var error: UnsafeMutablePointer<GError>?
        let path = secret_service_read_alias_dbus_path_sync(service, alias, Cancellation.current, &error)  // transfer full
        defer { g_free(path) }
        if let error { throw takeError(error) }
        return path.map { String(cString: $0) }
    }

    /// The object path behind `alias`; an error naming the alias when it is not set.
    private static func existingCollection(_ service: UnsafeMutablePointer<SecretService>, _ alias: String)
        throws(KeychainError) -> String
    {
        guard let path = try readAlias(service, alias) else { throw missingAlias(alias) }
        return path
    }

    /// The error for an alias no collection has.
    private static func missingAlias(_ alias: String) -> KeychainError {
        .backend(domain: "keychain", code: 0, message: "no collection has the alias '\(alias)'")
    }

    /// Creates the default collection, or the one with `alias` (the provider may prompt for its
    /// password).
    private static func createDefaultCollection(
        _ service: UnsafeMutablePointer<SecretService>, alias: String = KeychainCollection.default.alias, label: String = "Login"
    ) throws(KeychainError) -> String {
        let properties = PropertyTable(collectionLabel: label)
        var error: UnsafeMutablePointer<GError>?
        let path = secret_service_create_collection_dbus_path_sync(
            service, properties.pointer, alias, SECRET_COLLECTION_CREATE_NONE, Cancellation.current, &error)
        defer { g_free(path) }
        if let error { throw takeError(error) }
        guard let path else { throw .cancelled }  // the prompt was dismissed
        return String(cString: path)
    }

    /// Asks the provider to unlock the objects at `paths` (may show a prompt); `.locked` when
    /// none was unlocked.
    private static func unlock(_ service: UnsafeMutablePointer<SecretService>, paths: [String]) throws(KeychainError) {
        let strings = paths.map { UnsafePointer<gchar>(strdup($0)) } + [nil]
        defer { strings.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var error: UnsafeMutablePointer<GError>?
        let count = strings.withUnsafeBufferPointer { buffer in
            var pointers = Array(buffer)
            return secret_service_unlock_dbus_paths_sync(service, &pointers, Cancellation.current, &unlocked, &error)
        }
        g_strfreev(unlocked)
        if let error { throw takeError(error) }
        if count == 0 { throw .locked }
    }

    /// Asks the provider to unlock `items` (may show a prompt); `.locked` when none was unlocked.
    private static func unlock(_ service: UnsafeMutablePointer<SecretService>, _ items: [Item]) throws(KeychainError) {
        try withList(items) { list throws(KeychainError) in
            var unlocked: UnsafeMutablePointer<GList>?
            var error: UnsafeMutablePointer<GError>?
            let count = secret_service_unlock_sync(service, list, Cancellation.current, &unlocked, &error)
            g_list_free_full(unlocked, g_object_unref)
            if let error { throw takeError(error) }
            if count == 0 { throw .locked }
        }
    }

    /// Loads the secrets of unlocked `items` in one call (`secret_item_load_secrets_sync`).
    private static func loadSecrets(_ items: [Item]) throws(KeychainError) {
        let unlocked = items.filter { !$0.isLocked }
        guard !unlocked.isEmpty else { return }
        try withList(unlocked) { list throws(KeychainError) in
            var error: UnsafeMutablePointer<GError>?
            _ = secret_item_load_secrets_sync(list, Cancellation.current, &error)
            if let error { throw takeError(error) }
        }
    }

    /// Runs `body` with a temporary `GList` of the items (not owning them).
    private static func withList<T>(_ items: [Item], _ body: (UnsafeMutablePointer<GList>?) throws(KeychainError) -> T)
        throws(KeychainError) -> T
    {
        var list: UnsafeMutablePointer<GList>?
        for item in items.reversed() { list = g_list_prepend(list, item.rawPointer) }
        defer { g_list_free(list) }
        return try body(list)
    }

    // MARK: - Keyring control (for secretctl)

    /// A keyring as the provider reports it.
    struct CollectionInfo {
        var path: String
        var label: String
        var isLocked: Bool
        var itemCount: Int
    }

    /// Every collection of the provider (`secret_service_load_collections_sync`).
    static func collections() throws(KeychainError) -> [CollectionInfo] {
        try withService { service throws(KeychainError) in
            var error: UnsafeMutablePointer<GError>?
            _ = secret_service_load_collections_sync(service, Cancellation.current, &error)
            if let error { throw takeError(error) }
            let list = secret_service_get_collections(service)  // transfer full
            defer { g_list_free_full(list, g_object_unref) }
            var result: [CollectionInfo] = []
            var node = list
            while let current = node {
                node = current.pointee.next
                guard let data = current.pointee.data else { continue }
                let collection = data.assumingMemoryBound(to: SecretCollection.self)
                let proxy = UnsafeMutableRawPointer(collection).assumingMemoryBound(to: GDBusProxy.self)
                let label = secret_collection_get_label(collection)
                defer { g_free(label) }
                var count = 0
                if let items = g_dbus_proxy_get_cached_property(proxy, "Items") {  // transfer full
                    count = Int(g_variant_n_children(items))
                    g_variant_unref(items)
                }
                result.append(CollectionInfo(
                    path: g_dbus_proxy_get_object_path(proxy).map { String(cString: $0) } ?? "",
                    label: label.map { String(cString: $0) } ?? "", isLocked: secret_collection_get_locked(collection) != 0,
                    itemCount: count))
            }
            return result
        }
    }

    /// The unique name and process id of the provider that owns the bus name.
    static func providerOwner() throws(KeychainError) -> (name: String, pid: UInt32?) {
        try withService { service throws(KeychainError) in
            let proxy = UnsafeMutableRawPointer(service).assumingMemoryBound(to: GDBusProxy.self)
            guard let owner = g_dbus_proxy_get_name_owner(proxy) else { throw .noProvider(reason: "no owner of org.freedesktop.secrets") }
            defer { g_free(owner) }
            let name = String(cString: owner)
            let arguments: [OpaquePointer?] = [g_variant_new_string(owner)]
            let parameters = arguments.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, 1) }
            let reply = g_dbus_connection_call_sync(
                g_dbus_proxy_get_connection(proxy), "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "GetConnectionUnixProcessID", parameters, nil, G_DBUS_CALL_FLAGS_NONE, 5_000, Cancellation.current, nil)
            guard let reply else { return (name, nil) }
            defer { g_variant_unref(reply) }
            let child = g_variant_get_child_value(reply, 0)!
            defer { g_variant_unref(child) }
            return (name, g_variant_get_uint32(child))
        }
    }

    // MARK: - libsecret's own password calls (what secret-tool and most clients use)

    /// `secret_service_store_sync` with no schema, as `secret-tool store` calls it: one
    /// `CreateItem` with replace on the default collection's alias path.
    static func serviceStore(_ attributes: [String: String], label: String, secret: SecretBuffer) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let table = HashTable(attributes)
            let value = secretValue(secret, contentType: "text/plain")
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var error: UnsafeMutablePointer<GError>?
            _ = secret_service_store_sync(service, nil, table.pointer, nil, label, value, Cancellation.current, &error)
            if let error { throw takeError(error) }
        }
    }

    /// `secret_service_lookup_sync` with no schema, as `secret-tool lookup` calls it:
    /// `SearchItems`, then `GetSecrets` for the first match (unlocking it if needed).
    static func serviceLookup(_ attributes: [String: String]) throws(KeychainError) -> Data? {
        try withService { service throws(KeychainError) in
            let table = HashTable(attributes)
            var error: UnsafeMutablePointer<GError>?
            let value = secret_service_lookup_sync(service, nil, table.pointer, Cancellation.current, &error)
            if let error { throw takeError(error) }
            guard let value else { return nil }
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var length = 0
            guard let bytes = secret_value_get(value, &length) else { return Data() }
            return Data(bytes: bytes, count: length)
        }
    }

    /// `secret_service_clear_sync` with no schema, as `secret-tool clear` calls it:
    /// `SearchItems`, then `Delete` on every match. True when something was deleted.
    static func serviceClear(_ attributes: [String: String]) throws(KeychainError) -> Bool {
        try withService { service throws(KeychainError) in
            let table = HashTable(attributes)
            var error: UnsafeMutablePointer<GError>?
            let removed = secret_service_clear_sync(service, nil, table.pointer, Cancellation.current, &error)
            if let error { throw takeError(error) }
            return removed != 0
        }
    }

    /// `org.freedesktop.DBus.Peer.Ping` on the provider: one round trip that does no work.
    static func ping() throws(KeychainError) {
        try withService { service throws(KeychainError) in
            var error: UnsafeMutablePointer<GError>?
            let reply = g_dbus_connection_call_sync(
                connection(of: service), "org.freedesktop.secrets", "/org/freedesktop/secrets",
                "org.freedesktop.DBus.Peer", "Ping", nil, nil, G_DBUS_CALL_FLAGS_NONE, -1, Cancellation.current, &error)
            if let reply { g_variant_unref(reply) }
            if let error { throw takeError(error) }
        }
    }

    /// Locks the collection behind `alias` (`secret_service_lock_dbus_paths_sync`).
    static func lock(alias: String) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let path = try existingCollection(service, alias)
            let strings = [UnsafePointer<gchar>(strdup(path)), nil]
            defer { strings.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
            var pointers = strings
            var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            var error: UnsafeMutablePointer<GError>?
            _ = secret_service_lock_dbus_paths_sync(service, &pointers, Cancellation.current, &locked, &error)
            g_strfreev(locked)
            if let error { throw takeError(error) }
        }
    }

    /// Unlocks the collection behind `alias`: with `password`, through gnome-keyring's
    /// `UnlockWithMasterPassword` (served by secretd and gnome-keyring), sent encrypted in the
    /// session; without, through the provider's own prompt.
    static func unlock(alias: String, password: SecretBuffer?) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let path = try existingCollection(service, alias)
            guard let password else {
                try unlock(service, paths: [path])
                return
            }
            let encoded = try encodedPassword(service, password)
            g_variant_unref(try callGnomeExtension(service, "UnlockWithMasterPassword", [g_variant_new_object_path(path), encoded]))
        }
    }

    /// `password` as a Secret Service secret (`(oayays)`, floating) in the session, as
    /// gnome-keyring's `*WithMasterPassword` methods and secretd's access groups take it.
    private static func encodedPassword(
        _ service: UnsafeMutablePointer<SecretService>, _ password: SecretBuffer
    ) throws(KeychainError) -> OpaquePointer {
        let value = secretValue(password, contentType: "text/plain")
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        guard let encoded = secret_service_encode_dbus_secret(service, value) else {  // floating
            throw .backend(domain: "keychain", code: 0, message: "no session to send the password in")
        }
        return encoded
    }

    /// Calls `method` of gnome-keyring's extension interface (served by secretd and
    /// gnome-keyring) with `arguments` (floating values, consumed); returns the reply (unref it).
    private static func callGnomeExtension(
        _ service: UnsafeMutablePointer<SecretService>, _ method: String, _ arguments: [OpaquePointer?]
    ) throws(KeychainError) -> OpaquePointer {
        let parameters = arguments.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
        var error: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_sync(
            connection(of: service), "org.freedesktop.secrets", "/org/freedesktop/secrets",
            "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface", method, parameters, nil,
            G_DBUS_CALL_FLAGS_NONE, -1, Cancellation.current, &error)
        if let error {
            if let reply { g_variant_unref(reply) }
            throw takeError(error)
        }
        guard let reply else { throw .backend(domain: "keychain", code: 0, message: "no reply") }
        return reply
    }

    /// Whether a collection has `alias`.
    static func hasCollection(alias: String) throws(KeychainError) -> Bool {
        try withService { service throws(KeychainError) in try readAlias(service, alias) != nil }
    }

    /// Creates a collection labelled `label` under `password` and points `alias` at it: with
    /// gnome-keyring's `CreateWithMasterPassword` (served by secretd and gnome-keyring), the
    /// password sent encrypted in the session; without a password, through the provider's own
    /// prompt (which asks for the new password).
    static func createCollection(alias: String, label: String, password: SecretBuffer?) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            guard let password else {
                _ = try createDefaultCollection(service, alias: alias, label: label)
                return
            }
            let encoded = try encodedPassword(service, password)
            var entries: [OpaquePointer?] = [
                g_variant_new_dict_entry(
                    g_variant_new_string("org.freedesktop.Secret.Collection.Label"), g_variant_new_variant(g_variant_new_string(label)))
            ]
            let properties = entries.withUnsafeMutableBufferPointer { g_variant_new_array(nil, $0.baseAddress, 1) }
            let reply = try callGnomeExtension(service, "CreateWithMasterPassword", [properties, encoded])
            defer { g_variant_unref(reply) }
            let child = g_variant_get_child_value(reply, 0)!
            defer { g_variant_unref(child) }
            let path = String(cString: g_variant_get_string(child, nil))
            var aliasError: UnsafeMutablePointer<GError>?
            secret_service_set_alias_to_dbus_path_sync(service, alias, path, Cancellation.current, &aliasError)
            if let aliasError { throw takeError(aliasError) }
        }
    }

    /// Changes the password of the collection behind `alias` with gnome-keyring's
    /// `ChangeWithMasterPassword` (both passwords sent in the encrypted session), or through
    /// the provider's `ChangeWithPrompt` when `passwords` is nil.
    static func changePassword(alias: String, passwords: (current: SecretBuffer, new: SecretBuffer)?) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let path = try existingCollection(service, alias)
            var arguments: [OpaquePointer?] = [g_variant_new_object_path(path)]
            let method: String
            if let passwords {
                for password in [passwords.current, passwords.new] {
                    arguments.append(try encodedPassword(service, password))
                }
                method = "ChangeWithMasterPassword"
            } else {
                method = "ChangeWithPrompt"
            }
            let reply = try callGnomeExtension(service, method, arguments)
            defer { g_variant_unref(reply) }
            guard passwords == nil else { return }
            // ChangeWithPrompt returns a prompt path: run it (libsecret waits for Completed).
            let child = g_variant_get_child_value(reply, 0)!
            defer { g_variant_unref(child) }
            let prompt = String(cString: g_variant_get_string(child, nil))
            guard prompt != "/" else { return }
            try performPrompt(service, prompt)
        }
    }

    /// Runs the provider's prompt at `path` and waits for it to complete. A dismissed prompt
    /// is `.cancelled`: libsecret returns NULL, or (it hands back a dismissed prompt's result
    /// too) secretd's result `false`.
    private static func performPrompt(_ service: UnsafeMutablePointer<SecretService>, _ path: String) throws(KeychainError) {
        var promptError: UnsafeMutablePointer<GError>?
        let result = secret_service_prompt_at_dbus_path_sync(service, path, Cancellation.current, nil, &promptError)
        if let promptError { throw takeError(promptError) }
        guard let result else { throw .cancelled }
        defer { g_variant_unref(result) }
        var value = result
        if g_variant_is_of_type(value, g_variant_type_checked_("v")) != 0 { value = g_variant_get_variant(value) }
        defer { if value != result { g_variant_unref(value) } }
        if g_variant_is_of_type(value, g_variant_type_checked_("b")) != 0, g_variant_get_boolean(value) == 0 {
            throw .cancelled
        }
    }

    // MARK: - secretd's access groups

    /// The interface secretd serves beside the Secret Service for access groups.
    private static let accessGroupsInterface = "io.github.secretd.AccessGroups1"

    /// Calls `method` of secretd's access groups interface and hands the reply to `read`.
    /// A provider without it (gnome-keyring) is `.backend` with a message that says so.
    private static func callAccessGroups<T>(
        _ method: String, _ arguments: (UnsafeMutablePointer<SecretService>) throws(KeychainError) -> [OpaquePointer?],
        read: (OpaquePointer) -> T
    ) throws(KeychainError) -> T {
        try withService { service throws(KeychainError) in
            let values = try arguments(service)
            let parameters = values.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
            var error: UnsafeMutablePointer<GError>?
            let reply = g_dbus_connection_call_sync(
                connection(of: service), "org.freedesktop.secrets", "/org/freedesktop/secrets",
                accessGroupsInterface, method, parameters, nil, G_DBUS_CALL_FLAGS_NONE, -1, Cancellation.current, &error)
            if let error {
                if error.pointee.domain == g_dbus_error_quark(),
                    [G_DBUS_ERROR_UNKNOWN_METHOD, G_DBUS_ERROR_UNKNOWN_INTERFACE, G_DBUS_ERROR_UNKNOWN_OBJECT]
                        .map({ Int32($0.rawValue) }).contains(error.pointee.code)
                {
                    g_error_free(error)
                    throw .backend(domain: "keychain", code: 0, message: "the provider has no access groups (secretd has them)")
                }
                throw takeError(error)
            }
            guard let reply else { throw .backend(domain: "keychain", code: 0, message: "no reply") }
            defer { g_variant_unref(reply) }
            return read(reply)
        }
    }

    /// secretd's answer to WhoAmI: the caller's identity, groups, default group, confinement.
    static func whoAmI() throws(KeychainError) -> (identity: String, groups: [String], defaultGroup: String, confined: Bool) {
        try callAccessGroups("WhoAmI", { _ in [] }) { reply in
            (string(reply, 0), strings(reply, 1), string(reply, 2), boolean(reply, 3))
        }
    }

    /// secretd's policy: groups (name, ask mode, members) and confined apps with their groups.
    static func accessGroupPolicy() throws(KeychainError)
        -> (groups: [(name: String, ask: Bool, members: [String])], apps: [String: [String]])
    {
        try callAccessGroups("GetPolicy", { _ in [] }) { reply in
            var groups: [(name: String, ask: Bool, members: [String])] = []
            let groupArray = g_variant_get_child_value(reply, 0)!
            defer { g_variant_unref(groupArray) }
            for index in 0..<g_variant_n_children(groupArray) {
                let entry = g_variant_get_child_value(groupArray, index)!
                defer { g_variant_unref(entry) }
                groups.append((string(entry, 0), boolean(entry, 1), strings(entry, 2)))
            }
            var apps: [String: [String]] = [:]
            let appArray = g_variant_get_child_value(reply, 1)!
            defer { g_variant_unref(appArray) }
            for index in 0..<g_variant_n_children(appArray) {
                let entry = g_variant_get_child_value(appArray, index)!
                defer { g_variant_unref(entry) }
                apps[string(entry, 0)] = strings(entry, 1)
            }
            return (groups, apps)
        }
    }

    /// Adds or removes a member of a group; the person consents with the login `password`
    /// (sent in the encrypted session), or through the provider's prompt when it is nil.
    static func changeAccessGroup(add: Bool, group: String, identity: String, password: SecretBuffer?) throws(KeychainError) {
        let prompt = try callAccessGroups(add ? "AddMember" : "RemoveMember", { service throws(KeychainError) in
            var arguments: [OpaquePointer?] = [g_variant_new_string(group), g_variant_new_string(identity)]
            if let password {
                arguments.append(try encodedPassword(service, password))
            } else {
                // No password: a secret in no session ("/"), which asks secretd for its prompt.
                let byte = g_variant_type_new("y")
                defer { g_variant_type_free(byte) }
                let fields: [OpaquePointer?] = [
                    g_variant_new_object_path("/"), g_variant_new_array(byte, nil, 0), g_variant_new_array(byte, nil, 0),
                    g_variant_new_string("text/plain"),
                ]
                arguments.append(fields.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, 4) })
            }
            return arguments
        }) { reply in string(reply, 0) }
        guard prompt != "/" else { return }
        try withService { service throws(KeychainError) in try performPrompt(service, prompt) }
    }

    private static func string(_ tuple: OpaquePointer, _ index: Int) -> String {
        let child = g_variant_get_child_value(tuple, gsize(index))!
        defer { g_variant_unref(child) }
        return String(cString: g_variant_get_string(child, nil))
    }

    private static func strings(_ tuple: OpaquePointer, _ index: Int) -> [String] {
        let child = g_variant_get_child_value(tuple, gsize(index))!
        defer { g_variant_unref(child) }
        return (0..<g_variant_n_children(child)).map { string(child, Int($0)) }
    }

    private static func boolean(_ tuple: OpaquePointer, _ index: Int) -> Bool {
        let child = g_variant_get_child_value(tuple, gsize(index))!
        defer { g_variant_unref(child) }
        return g_variant_get_boolean(child) != 0
    }

    /// Drops libsecret's cached connection to the provider, so the next call opens a new
    /// session (after the provider was restarted or replaced).
    ///
    /// The corresponding libsecret function is `secret_service_disconnect`.
    static func disconnect() {
        secret_service_disconnect()
    }

    // MARK: - Cancellation

    /// A `GCancellable` for the calls of one async operation; cancelling it makes the blocking
    /// libsecret call in progress (or the next one) fail with `.cancelled`, which also closes
    /// an open prompt.
    final class Cancellation: @unchecked Sendable {
        fileprivate let pointer: UnsafeMutablePointer<GCancellable>

        init() { pointer = g_cancellable_new() }  // transfer full

        deinit { g_object_unref(pointer) }

        /// Cancels; safe from any thread (`g_cancellable_cancel` is thread-safe).
        func cancel() { g_cancellable_cancel(pointer) }

        /// The cancellable of the operation running on this thread, if it was started by
        /// ``run(on:)``; nil for synchronous callers.
        fileprivate static var current: UnsafeMutablePointer<GCancellable>? {
            pthread_getspecific(threadKey).map { Unmanaged<Cancellation>.fromOpaque($0).takeUnretainedValue().pointer }
        }

        /// The thread-specific slot that holds the running operation's cancellation.
        private static let threadKey: pthread_key_t = {
            var key = pthread_key_t()
            precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left")
            return key
        }()

        /// Runs `body` on a new thread named `name` whose libsecret calls use this
        /// cancellation (here, if no thread can be had). The thread keeps it alive until
        /// `body` returns.
        func run(on name: String, _ body: @escaping @Sendable () -> Void) {
            let work = { [self] in
                pthread_setspecific(Self.threadKey, Unmanaged.passUnretained(self).toOpaque())
                body()
                pthread_setspecific(Self.threadKey, nil)
            }
            if !DetachedThread.start(named: name, work) { work() }
        }
    }

    // MARK: - Items

    /// What a listing shows of an item, whichever way it was read.
    protocol ItemProperties {
        /// The item's D-Bus object path.
        var objectPath: String { get }
        /// The item's attributes (none while a provider that seals them keeps it locked).
        var attributes: [String: String] { get }
        /// The item's label.
        var label: String { get }
        /// When the provider created the item.
        var created: Date { get }
        /// When the provider last modified the item.
        var modified: Date { get }
        /// Whether the item is locked.
        var isLocked: Bool { get }
    }

    /// An item's properties, read by ``summaries(_:in:)`` without an item proxy.
    struct ItemSummary: ItemProperties {
        /// Errors that mean the item went between the search and the read of its properties.
        static let vanishedErrors: Set<String> = [
            "org.freedesktop.Secret.Error.NoSuchObject", "org.freedesktop.DBus.Error.UnknownObject",
            "org.freedesktop.DBus.Error.UnknownMethod",
        ]

        let objectPath: String
        var attributes: [String: String] = [:]
        var label = ""
        var created = Date(timeIntervalSince1970: 0)
        var modified = Date(timeIntervalSince1970: 0)
        var isLocked = false

        init(objectPath: String) { self.objectPath = objectPath }
    }

    /// One item found by a search; owns its `SecretItem` reference.
    final class Item: ItemProperties {
        private let pointer: UnsafeMutablePointer<SecretItem>

        /// Takes over a reference the caller owned.
        fileprivate init(adopting pointer: UnsafeMutablePointer<SecretItem>) {
            self.pointer = pointer
        }

        deinit { g_object_unref(pointer) }

        /// The `SecretItem*` for list-taking libsecret calls (the item keeps its reference).
        fileprivate var rawPointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }

        /// The item's D-Bus object path, which identifies it for the provider's lifetime.
        var objectPath: String {
            let proxy = UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GDBusProxy.self)
            return g_dbus_proxy_get_object_path(proxy).map { String(cString: $0) } ?? ""
        }

        /// The item's attributes (`secret_item_get_attributes`, transfer full).
        var attributes: [String: String] {
            guard let table = secret_item_get_attributes(pointer) else { return [:] }
            defer { g_hash_table_unref(table) }
            return HashTable.dictionary(table)
        }

        /// The item's label (`secret_item_get_label`, transfer full).
        var label: String {
            guard let label = secret_item_get_label(pointer) else { return "" }
            defer { g_free(label) }
            return String(cString: label)
        }

        /// When the provider created the item.
        var created: Date { Date(timeIntervalSince1970: TimeInterval(secret_item_get_created(pointer))) }

        /// When the provider last modified the item.
        var modified: Date { Date(timeIntervalSince1970: TimeInterval(secret_item_get_modified(pointer))) }

        /// Whether the item is still locked (its secret cannot be read).
        var isLocked: Bool { secret_item_get_locked(pointer) != 0 }

        /// Hands the loaded secret's bytes and content type to `body`; `nil` when no secret was
        /// loaded. The bytes live in libsecret's secure memory and are wiped when released.
        func withSecret<T>(
            _ body: (UnsafeRawBufferPointer, String) throws(KeychainError) -> T
        ) throws(KeychainError) -> T? {
            guard let value = secret_item_get_secret(pointer) else { return nil }  // transfer full
            return try LibSecret.consume(value, body)
        }

        /// Replaces the secret (`secret_item_set_secret_sync`).
        func setSecret(_ secret: SecretBuffer, contentType: String) throws(KeychainError) {
            let value = secretValue(secret, contentType: contentType)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var error: UnsafeMutablePointer<GError>?
            _ = secret_item_set_secret_sync(pointer, value, Cancellation.current, &error)
            if let error { throw takeError(error) }
        }

        /// Replaces the label (`secret_item_set_label_sync`).
        func setLabel(_ label: String) throws(KeychainError) {
            var error: UnsafeMutablePointer<GError>?
            _ = secret_item_set_label_sync(pointer, label, Cancellation.current, &error)
            if let error { throw takeError(error) }
        }

        /// Replaces the whole attribute set (`secret_item_set_attributes_sync`, no schema check).
        func setAttributes(_ attributes: [String: String]) throws(KeychainError) {
            let table = HashTable(attributes)
            var error: UnsafeMutablePointer<GError>?
            _ = secret_item_set_attributes_sync(pointer, nil, table.pointer, Cancellation.current, &error)
            if let error { throw takeError(error) }
        }

        /// Deletes the item (`secret_item_delete_sync`).
        func delete() throws(KeychainError) {
            var error: UnsafeMutablePointer<GError>?
            _ = secret_item_delete_sync(pointer, Cancellation.current, &error)
            if let error { throw takeError(error) }
        }
    }

    // MARK: - Connection

    /// Runs `body` with libsecret's shared `SecretService`, retrying once on a fresh connection
    /// when the cached one is stale: the provider was restarted or replaced, so its old unique
    /// bus name is gone (libsecret's proxy stays bound to it) or it no longer knows our session.
    private static func withService<T>(
        _ body: (UnsafeMutablePointer<SecretService>) throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        do {
            return try attemptWithService(body)
        } catch let error where isStaleConnection(error) {
            disconnect()
            return try attemptWithService(body)
        }
    }

    /// Whether `error` means the cached connection points at a provider that is gone.
    private static func isStaleConnection(_ error: KeychainError) -> Bool {
        switch error {
        case .noProvider: return true
        case .backend(let domain, let code, _): return domain == RemoteError.domain && code == RemoteError.noSession.rawValue
        default: return false
        }
    }

    private static func attemptWithService<T>(
        _ body: (UnsafeMutablePointer<SecretService>) throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        RemoteError.registerOnce()
        var error: UnsafeMutablePointer<GError>?
        // transfer full; opening a session reaches the provider, so a missing one fails here.
        let service = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, Cancellation.current, &error)
        if let error {
            if let service { g_object_unref(service) }
            switch takeError(error) {
            case .backend(_, _, let message): throw .noProvider(reason: message)
            case let other: throw other
            }
        }
        guard let service else { throw .noProvider(reason: "libsecret returned no service") }
        defer { g_object_unref(service) }
        return try body(service)
    }

    // MARK: - Errors

    /// D-Bus error names libsecret does not map itself, registered in a private GError domain
    /// so they survive libsecret stripping the remote name from the message.
    private enum RemoteError: Int32, CaseIterable {
        case denied = 1
        case noSession = 2
        case accessDenied = 3

        static let domain = "keychain-remote-error"

        var dbusName: String {
            switch self {
            case .denied: return "org.gnome.keyring.Error.Denied"
            case .noSession: return "org.freedesktop.Secret.Error.NoSession"
            case .accessDenied: return "org.freedesktop.Secret.Error.AccessDenied"
            }
        }

        private static let registration: Void = {
            for error in RemoteError.allCases {
                _ = g_dbus_error_register_error(quark, error.rawValue, error.dbusName)
            }
        }()

        static var quark: GQuark { g_quark_from_string(domain) }

        static func registerOnce() { _ = registration }
    }

    /// Turns a GError into a `KeychainError` and frees it.
    private static func takeError(_ error: UnsafeMutablePointer<GError>) -> KeychainError {
        defer { g_error_free(error) }
        // libsecret strips remote names already; strip again in case a call path did not.
        _ = g_dbus_error_strip_remote_error(error)
        let domain = error.pointee.domain
        let code = error.pointee.code
        let message = error.pointee.message.map { String(cString: $0) } ?? ""

        if domain == secret_error_get_quark() && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue) {
            return .locked
        }
        if domain == g_io_error_quark() {
            switch code {
            case Int32(G_IO_ERROR_CANCELLED.rawValue): return .cancelled
            case Int32(G_IO_ERROR_CLOSED.rawValue), Int32(G_IO_ERROR_CONNECTION_REFUSED.rawValue),
                Int32(G_IO_ERROR_NOT_FOUND.rawValue), Int32(G_IO_ERROR_BROKEN_PIPE.rawValue),
                Int32(G_IO_ERROR_CONNECTION_CLOSED.rawValue):
                return .noProvider(reason: message)
            default: break
            }
        }
        if domain == g_dbus_error_quark() {
            switch code {
            case Int32(G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue), Int32(G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue),
                Int32(G_DBUS_ERROR_NO_SERVER.rawValue), Int32(G_DBUS_ERROR_DISCONNECTED.rawValue),
                Int32(G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND.rawValue):
                return .noProvider(reason: message)
            case Int32(G_DBUS_ERROR_ACCESS_DENIED.rawValue), Int32(G_DBUS_ERROR_AUTH_FAILED.rawValue):
                return .accessDenied(message: message)
            default: break
            }
        }
        if domain == RemoteError.quark, let remote = RemoteError(rawValue: code) {
            switch remote {
            case .denied, .accessDenied: return .accessDenied(message: message)
            case .noSession: return .backend(domain: RemoteError.domain, code: Int(code), message: message)
            }
        }
        let domainName = g_quark_to_string(domain).map { String(cString: $0) } ?? "unknown"
        return .backend(domain: domainName, code: Int(code), message: message)
    }

    // MARK: - Conversions

    /// A `SecretValue` holding a copy of `secret` in libsecret's secure memory (transfer full).
    /// Hands a `SecretValue`'s bytes and content type to `body`, then releases the value (its
    /// reference was the caller's), which wipes it: libsecret keeps secrets in egg-secure memory.
    fileprivate static func consume<T>(
        _ value: OpaquePointer, _ body: (UnsafeRawBufferPointer, String) throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var length = 0
        let bytes = secret_value_get(value, &length)
        let contentType = secret_value_get_content_type(value).map { String(cString: $0) } ?? ""
        return try body(UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : length), contentType)
    }

    private static func secretValue(_ secret: SecretBuffer, contentType: String) -> OpaquePointer {
        let bytes = secret.view
        let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
        // secret_value_new copies the bytes (egg_secure memory); a NULL pointer is not allowed.
        return withUnsafePointer(to: CChar(0)) { empty in
            secret_value_new(base ?? empty, bytes.count, contentType)
        }
    }

    /// Wraps every item of a `GList` of `SecretItem` (transfer full) and frees the list.
    private static func adoptItems(_ list: UnsafeMutablePointer<GList>?) -> [Item] {
        var items: [Item] = []
        var node = list
        while let current = node {
            if let data = current.pointee.data {
                items.append(Item(adopting: data.assumingMemoryBound(to: SecretItem.self)))
            }
            node = current.pointee.next
        }
        g_list_free(list)
        return items
    }

    /// A `GHashTable` of D-Bus property names to `GVariant` values, for the path-based create
    /// calls; unreferenced when released.
    private final class PropertyTable {
        let pointer: OpaquePointer

        private init(_ values: [String: OpaquePointer]) {
            pointer = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, { g_variant_unref(OpaquePointer($0)) })
            for (key, value) in values {
                g_hash_table_insert(pointer, g_strdup(key), UnsafeMutableRawPointer(g_variant_ref_sink(value)))
            }
        }

        /// An item's label and attributes.
        convenience init(label: String, attributes: [String: String]) {
            let entryType = g_variant_type_new("{ss}")
            defer { g_variant_type_free(entryType) }
            let entries: [OpaquePointer?] = attributes.map {
                g_variant_new_dict_entry(g_variant_new_string($0.key), g_variant_new_string($0.value))
            }
            let array = entries.withUnsafeBufferPointer { g_variant_new_array(entryType, $0.baseAddress, gsize($0.count)) }!
            self.init([
                "org.freedesktop.Secret.Item.Label": g_variant_new_string(label),
                "org.freedesktop.Secret.Item.Attributes": array,
            ])
        }

        /// A collection's label.
        convenience init(collectionLabel: String) {
            self.init(["org.freedesktop.Secret.Collection.Label": g_variant_new_string(collectionLabel)])
        }

        deinit { g_hash_table_unref(pointer) }
    }

    /// A `GHashTable` of strings built from a dictionary; unreferenced when released.
    private final class HashTable {
        let pointer: OpaquePointer

        init(_ dictionary: [String: String]) {
            pointer = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)
            for (key, value) in dictionary {
                g_hash_table_insert(pointer, g_strdup(key), g_strdup(value))
            }
        }

        deinit { g_hash_table_unref(pointer) }

        /// Copies a `GHashTable` of strings into a dictionary.
        static func dictionary(_ table: OpaquePointer) -> [String: String] {
            var result: [String: String] = [:]
            var iterator = GHashTableIter()
            g_hash_table_iter_init(&iterator, table)
            var key: gpointer?
            var value: gpointer?
            while g_hash_table_iter_next(&iterator, &key, &value) != 0 {
                guard let key, let value else { continue }
                result[String(cString: key.assumingMemoryBound(to: CChar.self))] =
                    String(cString: value.assumingMemoryBound(to: CChar.self))
            }
            return result
        }
    }
}

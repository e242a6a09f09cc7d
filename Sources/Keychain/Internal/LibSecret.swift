// libsecret's item calls and its own password calls (what secret-tool uses). Only the
// LibSecret*.swift files import CLibSecret: the rest of the library sees Swift types.
// Ownership of every returned C object is noted next to the call ("transfer full" = ours to free).

internal import CLibSecret
import DBusValues
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
            if prefix == nil && options.loadSecrets { flags |= SECRET_SEARCH_LOAD_SECRETS.rawValue }
            let table = HashTable(attributes)
            func searchOnce(_ flags: UInt32) throws(KeychainError) -> [Item] {
                var error: UnsafeMutablePointer<GError>?
                // transfer full: the list and its items are ours
                let list = secret_service_search_sync(service, nil, table.pointer, SecretSearchFlags(rawValue: flags), Cancellation.current, &error)
                if let error { throw takeError(error) }
                return adoptItems(list)
            }
            var items = try searchOnce(flags)
            // SECRET_SEARCH_UNLOCK makes libsecret call Unlock even when no match is locked (a
            // round trip per search, two per `set`); it is asked for only when one is.
            if prefix == nil, options.unlock, items.contains(where: \.isLocked) {
                items = try searchOnce(flags | SECRET_SEARCH_UNLOCK.rawValue)
            }
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
        var summaries: [ItemSummary] = []
        try forEachSummaryPage(attributes, in: collection) { page in summaries += page }
        return summaries
    }

    /// ``summaries(_:in:)`` handed to `body` a page at a time (at most ``pageSize`` items, in
    /// the order found), so that a caller that keeps less than every item never holds them all.
    static func forEachSummaryPage(
        _ attributes: [String: String], in collection: KeychainCollection?, _ body: ([ItemSummary]) throws(KeychainError) -> Void
    ) throws(KeychainError) {
        var handed = 0  // pages handed, so that a retry on a fresh connection goes on after them
        try withService { service throws(KeychainError) in
            guard let found = try searchPaths(service, attributes, in: collection) else { return }
            let paths = found.unlocked + found.locked
            // secretd reads a page of items a call (Import1.ReadItems); other providers, one GetAll each.
            let paged = try readPages(service, paths, secrets: false, handed: &handed) { page throws(KeychainError) in
                try body(page.map { item in
                    var summary = ItemSummary(objectPath: item.path)
                    summary.isLocked = item.isLocked
                    summary.label = item.label
                    summary.attributes = item.attributes
                    summary.created = Date(timeIntervalSince1970: TimeInterval(item.created))
                    summary.modified = Date(timeIntervalSince1970: TimeInterval(item.modified))
                    return summary
                })
            }
            if paged { return }
            let bus = connection(of: service)
            for start in stride(from: handed * pageSize, to: paths.count, by: pageSize) {
                var page: [ItemSummary] = []
                for path in paths[start..<min(paths.count, start + pageSize)] {
                    if let summary = try itemSummary(bus, path: path) { page.append(summary) }
                }
                try body(page)
                handed += 1
            }
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
        guard let reply = try call(
            connection, path: path, interface: SecretServiceNames.Interface.properties, method: "GetAll",
            arguments: [.string(SecretServiceNames.Interface.item)], absentWhen: ItemSummary.vanishedErrors)
        else { return nil }
        guard reply.count == 1, case .dictionary("s", "v", _) = reply[0], let properties = reply[0].variantMap else {
            throw .unexpectedData(reason: "the provider answered GetAll for \(path) with the wrong type")
        }
        // Every item has `Locked`. A provider that leaves `GetAll` to GDBus answers it on a path
        // with no item with no properties rather than an error (GDBus skips each property that
        // fails to read); secretd did until it answered `GetAll` itself.
        guard let isLocked = properties["Locked"]?.boolean else { return nil }
        var summary = ItemSummary(objectPath: path)
        summary.isLocked = isLocked
        if let label = properties["Label"]?.string { summary.label = label }
        if let attributes = properties["Attributes"]?.stringMap { summary.attributes = attributes }
        if let created = properties["Created"]?.uint64 { summary.created = Date(timeIntervalSince1970: TimeInterval(created)) }
        if let modified = properties["Modified"]?.uint64 { summary.modified = Date(timeIntervalSince1970: TimeInterval(modified)) }
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
    static func searchPaths(
        _ service: UnsafeMutablePointer<SecretService>, _ attributes: [String: String], in collection: KeychainCollection?
    ) throws(KeychainError) -> (unlocked: [String], locked: [String])? {
        try searchPaths(service, attributes, alias: collection?.alias)
    }

    /// ``searchPaths(_:_:in:)`` in the keyring of `alias` (in all when nil).
    static func searchPaths(
        _ service: UnsafeMutablePointer<SecretService>, _ attributes: [String: String], alias: String?
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
        guard let alias else { return (strings(unlocked), strings(locked)) }
        guard let path = try readAlias(service, alias) else { return nil }
        let inCollection = { (item: String) in item.hasPrefix(path + "/") }
        return (strings(unlocked).filter(inCollection), strings(locked).filter(inCollection))
    }

    /// The D-Bus connection of libsecret's service proxy (not ours to unref), for the calls
    /// libsecret has no function for.
    /// The strings of a NULL-terminated `gchar**` (not consumed).
    static func strings(_ vector: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
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
    /// include the new ones, which would overwrite an item of another key. The item is created
    /// at the alias's own path (`…/aliases/default`), one round trip, as libsecret's own store
    /// does; only when that fails is the alias read. A locked collection is unlocked (which may
    /// show a prompt) and the call retried once; a missing default collection is created (which
    /// may prompt for its password), as libsecret's own store does.
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
            let properties = PropertyTable(label: label, attributes: attributes)
            let value = secretValue(secret, contentType: contentType)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            func attempt(at path: String) -> KeychainError? {
                var error: UnsafeMutablePointer<GError>?
                let item = secret_service_create_item_dbus_path_sync(
                    service, path, properties.pointer, value, SECRET_ITEM_CREATE_NONE, Cancellation.current, &error)
                g_free(item)
                return error.map(takeError)
            }
            // Straight at the alias's own path, as libsecret's secret_service_store does: one
            // round trip. An alias that cannot be a path element (`-`, say) is only read.
            var lockedAtAlias = false
            if SecretServiceNames.isAliasName(alias) {
                guard let failure = attempt(at: SecretServiceNames.Path.alias(alias)) else { return }
                lockedAtAlias = failure == .locked
            }
            // The alias read: no keyring behind it yet (`default` is made), or a provider that
            // serves no alias paths.
            let path: String
            if let found = try readAlias(service, alias) {
                path = found
            } else if alias == KeychainCollection.default.alias {
                path = try createDefaultCollection(service)
            } else {
                throw missingAlias(alias)
            }
            if !lockedAtAlias {
                guard let failure = attempt(at: path) else { return }
                guard failure == .locked else { throw failure }
            }
            try unlock(service, paths: [path])
            if let again = attempt(at: path) { throw again }
        }
    }

    /// The object path an alias points at, or nil (`secret_service_read_alias_dbus_path_sync`).
    static func readAlias(_ service: UnsafeMutablePointer<SecretService>, _ alias: String) throws(KeychainError)
        -> String?
    {
        var error: UnsafeMutablePointer<GError>?
        let path = secret_service_read_alias_dbus_path_sync(service, alias, Cancellation.current, &error)  // transfer full
        defer { g_free(path) }
        if let error { throw takeError(error) }
        return path.map { String(cString: $0) }
    }

    /// The object path behind `alias`; an error naming the alias when it is not set.
    static func existingCollection(_ service: UnsafeMutablePointer<SecretService>, _ alias: String)
        throws(KeychainError) -> String
    {
        guard let path = try readAlias(service, alias) else { throw missingAlias(alias) }
        return path
    }

    /// The error for an alias no collection has.
    private static func missingAlias(_ alias: String) -> KeychainError { .noSuchKeyring(alias: alias) }

    /// Creates the default collection, or the one with `alias` (the provider may prompt for its
    /// password).
    static func createDefaultCollection(
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
    static func unlock(_ service: UnsafeMutablePointer<SecretService>, paths: [String]) throws(KeychainError) {
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
    static func withList<T>(_ items: [Item], _ body: (UnsafeMutablePointer<GList>?) throws(KeychainError) -> T)
        throws(KeychainError) -> T
    {
        var list: UnsafeMutablePointer<GList>?
        for item in items.reversed() { list = g_list_prepend(list, item.rawPointer) }
        defer { g_list_free(list) }
        return try body(list)
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

    /// Drops libsecret's cached connection to the provider, so the next call opens a new
    /// session (after the provider was restarted or replaced).
    ///
    /// The corresponding libsecret function is `secret_service_disconnect`.
    static func disconnect() {
        secret_service_disconnect()
    }
}

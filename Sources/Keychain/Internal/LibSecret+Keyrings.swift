// Keyring control for secretctl: listing, locking, unlocking, creating and changing the
// password of collections, partly through gnome-keyring's extension interface over GDBus.

internal import CLibSecret
import DBusValues
import KeychainCore
import FoundationEssentials
import Glibc

extension LibSecret {
    // MARK: - Keyring control (for secretctl)

    /// A keyring as the provider reports it.
    struct CollectionInfo {
        var path: String
        var label: String
        var isLocked: Bool
        var itemCount: Int
        var isDefault: Bool
    }

    /// Every collection of the provider: the service's `Collections`, then one `GetAll` a
    /// collection. Not `secret_service_load_collections_sync`, which makes a proxy of every
    /// item of every collection (one `GetAll` an item: most of a minute at 20,000 items).
    static func collections() throws(KeychainError) -> [CollectionInfo] {
        try withService { service throws(KeychainError) in
            let bus = connection(of: service)
            let defaultPath = try readAlias(service, "default")
            guard let reply = try call(
                bus, interface: SecretServiceNames.Interface.properties, method: "Get",
                arguments: [.string(SecretServiceNames.Interface.service), .string("Collections")]),
                reply.count == 1, let paths = reply[0].variant?.objectPaths
            else { throw .unexpectedData(reason: "the provider's Collections is not a list of object paths") }
            var result: [CollectionInfo] = []
            for path in paths {
                // A collection deleted meanwhile is left out.
                guard let reply = try call(
                    bus, path: path, interface: SecretServiceNames.Interface.properties, method: "GetAll",
                    arguments: [.string(SecretServiceNames.Interface.collection)], absentWhen: ItemSummary.vanishedErrors),
                    reply.count == 1, let properties = reply[0].variantMap, let isLocked = properties["Locked"]?.boolean
                else { continue }
                let items: Int = if case .array("o", let list)? = properties["Items"] { list.count } else { 0 }
                result.append(CollectionInfo(
                    path: path, label: properties["Label"]?.string ?? "", isLocked: isLocked, itemCount: items,
                    isDefault: path == defaultPath))
            }
            return result
        }
    }

    /// The unique name and process id of the provider that owns the bus name.
    static func providerOwner() throws(KeychainError) -> (name: String, pid: UInt32?) {
        try withService { service throws(KeychainError) in
            let proxy = UnsafeMutableRawPointer(service).assumingMemoryBound(to: GDBusProxy.self)
            guard let owner = g_dbus_proxy_get_name_owner(proxy) else {
                throw .noProvider(reason: "no owner of \(providerBusName)")
            }
            defer { g_free(owner) }
            let name = String(cString: owner)
            // The process id is a detail of the report: a bus that will not tell leaves it out.
            let reply = try? call(
                connection(of: service), destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus", method: "GetConnectionUnixProcessID", arguments: [.string(name)],
                timeout: 5_000)
            return (name, reply?.first?.uint32)
        }
    }

    /// `org.freedesktop.DBus.Peer.Ping` on the provider: one round trip that does no work.
    static func ping() throws(KeychainError) {
        try withService { service throws(KeychainError) in
            _ = try call(connection(of: service), interface: SecretServiceNames.Interface.peer, method: "Ping")
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

    /// Locks every keyring, with the keys of their after-first-unlock items (secretd's
    /// `Locking1.LockAll`).
    static func lockAll() throws(KeychainError) {
        try withService { service throws(KeychainError) in
            _ = try callSecretd(
                service, SecretServiceNames.Interface.locking, "LockAll", feature: "after-first-unlock items")
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
            _ = try callGnomeExtension(service, "UnlockWithMasterPassword", [.objectPath(path)], encoded: [encoded])
        }
    }

    /// `password` as a Secret Service secret (`(oayays)`, floating) in the session, as
    /// gnome-keyring's `*WithMasterPassword` methods and secretd's access groups take it.
    static func encodedPassword(
        _ service: UnsafeMutablePointer<SecretService>, _ password: SecretBuffer
    ) throws(KeychainError) -> OpaquePointer {
        let value = secretValue(password, contentType: "text/plain")
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        guard let encoded = secret_service_encode_dbus_secret(service, value) else {  // floating
            throw .protocolError(reason: "no session to send the password in")
        }
        return encoded
    }

    /// Calls `method` of gnome-keyring's extension interface (served by secretd and
    /// gnome-keyring) with `arguments` and then `encoded` (floating, consumed); returns the reply.
    static func callGnomeExtension(
        _ service: UnsafeMutablePointer<SecretService>, _ method: String, _ arguments: [DBusValue], encoded: [OpaquePointer] = []
    ) throws(KeychainError) -> [DBusValue] {
        guard let reply = try call(
            connection(of: service), interface: SecretServiceNames.Interface.gnomeExtension, method: method,
            arguments: arguments, encoded: encoded)
        else { throw .protocolError(reason: "no reply to \(method)") }
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
            let reply = try callGnomeExtension(
                service, "CreateWithMasterPassword", [.properties([SecretServiceNames.Property.collectionLabel: .string(label)])],
                encoded: [encoded])
            guard let path = reply.first?.objectPath else { throw .protocolError(reason: "CreateWithMasterPassword returned no path") }
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
            if let passwords {
                let current = try encodedPassword(service, passwords.current)
                let new: OpaquePointer
                do throws(KeychainError) {
                    new = try encodedPassword(service, passwords.new)
                } catch {
                    g_variant_unref(g_variant_ref_sink(current))
                    throw error
                }
                _ = try callGnomeExtension(service, "ChangeWithMasterPassword", [.objectPath(path)], encoded: [current, new])
                return
            }
            // ChangeWithPrompt returns a prompt path: run it (libsecret waits for Completed).
            let reply = try callGnomeExtension(service, "ChangeWithPrompt", [.objectPath(path)])
            guard let prompt = reply.first?.objectPath else { throw .protocolError(reason: "ChangeWithPrompt returned no prompt") }
            guard prompt != SecretServiceNames.Path.none else { return }
            try performPrompt(service, prompt)
        }
    }

    /// Runs the provider's prompt at `path` and waits for it to complete. A dismissed prompt
    /// is `.cancelled`: libsecret returns NULL, or (it hands back a dismissed prompt's result
    /// too) secretd's result `false`.
    static func performPrompt(_ service: UnsafeMutablePointer<SecretService>, _ path: String) throws(KeychainError) {
        var promptError: UnsafeMutablePointer<GError>?
        let result = secret_service_prompt_at_dbus_path_sync(service, path, Cancellation.current, nil, &promptError)
        if let promptError { throw takeError(promptError) }
        guard let result else { throw .cancelled }
        defer { g_variant_unref(result) }
        var value = DBusValue.makeValue(result)
        if let inner = value?.variant { value = inner }
        if value?.boolean == false { throw .cancelled }
    }
}

// An item as a search returns it: libsecret's SecretItem, or a summary read without a proxy.

internal import CLibSecret
import KeychainCore
import FoundationEssentials
import Glibc

extension LibSecret {
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
            SecretServiceNames.ErrorName.noSuchObject, "org.freedesktop.DBus.Error.UnknownObject",
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
        let pointer: UnsafeMutablePointer<SecretItem>

        /// Takes over a reference the caller owned.
        init(adopting pointer: UnsafeMutablePointer<SecretItem>) {
            self.pointer = pointer
        }

        deinit { g_object_unref(pointer) }

        /// The `SecretItem*` for list-taking libsecret calls (the item keeps its reference).
        var rawPointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }

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
}

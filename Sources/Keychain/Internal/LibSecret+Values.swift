// Secret values, item lists and hash tables: converting between libsecret's C values and Swift.

internal import CLibSecret
import DBusValues
import KeychainCore
import FoundationEssentials
import Glibc

extension LibSecret {
    // MARK: - Conversions

    /// Hands a `SecretValue`'s bytes and content type to `body`, then releases the value (its
    /// reference was the caller's), which wipes it: libsecret keeps secrets in egg-secure memory.
    static func consume<T>(
        _ value: OpaquePointer, _ body: (UnsafeRawBufferPointer, String) throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var length = 0
        let bytes = secret_value_get(value, &length)
        let contentType = secret_value_get_content_type(value).map { String(cString: $0) } ?? ""
        return try body(UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : length), contentType)
    }

    /// A `SecretValue` holding a copy of `secret` in libsecret's secure memory (transfer full).
    static func secretValue(_ secret: SecretBuffer, contentType: String) -> OpaquePointer {
        let bytes = secret.view
        let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
        // secret_value_new copies the bytes (egg_secure memory); a NULL pointer is not allowed.
        return withUnsafePointer(to: CChar(0)) { empty in
            secret_value_new(base ?? empty, bytes.count, contentType)
        }
    }

    /// Wraps every item of a `GList` of `SecretItem` (transfer full) and frees the list.
    static func adoptItems(_ list: UnsafeMutablePointer<GList>?) -> [Item] {
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
    final class PropertyTable {
        let pointer: OpaquePointer

        private init(_ values: [String: DBusValue]) {
            pointer = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, { g_variant_unref(OpaquePointer($0)) })
            for (key, value) in values {
                g_hash_table_insert(pointer, g_strdup(key), UnsafeMutableRawPointer(g_variant_ref_sink(DBusValue.makeVariant(value))))
            }
        }

        /// An item's label and attributes.
        convenience init(label: String, attributes: [String: String]) {
            self.init([
                SecretServiceNames.Property.itemLabel: .string(label),
                SecretServiceNames.Property.itemAttributes: .stringMap(attributes),
            ])
        }

        /// A collection's label.
        convenience init(collectionLabel: String) {
            self.init([SecretServiceNames.Property.collectionLabel: .string(collectionLabel)])
        }

        deinit { g_hash_table_unref(pointer) }
    }

    /// A `GHashTable` of strings built from a dictionary; unreferenced when released.
    final class HashTable {
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

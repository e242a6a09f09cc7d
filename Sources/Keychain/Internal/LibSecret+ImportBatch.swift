// A batch of items for secretd's `Import1.ImportPackedItems` (issue 51, point 6), or its
// `ImportItems` where it has no packed call: encoded for libsecret's session, sent over GDBus
// on libsecret's connection, written by secretd in one transaction. Its call runs on a thread
// of its own, so that the caller can encode and send the next batch while secretd writes this
// one.

internal import CLibSecret
import DBusValues
import FoundationEssentials
import KeychainCore

extension LibSecret {
    /// One item of an ``ImportBatch``: label, attributes, secret.
    typealias ImportItem = (label: String, attributes: [String: String], secret: Data)

    /// A batch of items for secretd's `ImportPackedItems` (an older secretd's `ImportItems`),
    /// which writes them in one transaction into the keyring of an alias (the default one when
    /// nil): packed (``PackedItems``) with the session of the service in use when it is made;
    /// ``send()`` starts its call and returns at once; ``counts()`` waits for the reply.
    final class ImportBatch: @unchecked Sendable {
        private let items: [ImportItem]
        private let alias: String?
        private let replace: Bool
        /// The packed call's name; a test names one secretd does not have, to take the fallback.
        #if DEBUG
        nonisolated(unsafe) static var packedMethod = "ImportPackedItems"
        #else
        static let packedMethod = "ImportPackedItems"
        #endif

        /// The packed items, until its call has sent them.
        private var packed: DBusBytes?
        /// The service whose session encrypted the packed secrets (referenced while the
        /// batch lives, so that no later service has its address).
        private var service: UnsafeMutablePointer<SecretService>
        /// The call, once sent.
        private var call: Prefetch<OwnedVariant?>?

        /// `items`, encoded now, for the keyring of `alias`; with `replace` an item with the
        /// attributes of one there already (``ItemIdentity``) replaces it, else it is skipped.
        init(_ items: [ImportItem], alias: String?, replace: Bool) throws(KeychainError) {
            self.items = items
            self.alias = alias
            self.replace = replace
            (packed, service) = try withService { service throws(KeychainError) in try Self.pack(items, service) }
        }

        deinit { g_object_unref(service) }

        /// Starts the call, unless it was started, and returns without waiting for its reply.
        /// A batch packed for a service that is no longer the one in use is packed again.
        func send() throws(KeychainError) {
            guard call == nil else { return }
            try withService { service throws(KeychainError) in
                if packed == nil || self.service != service {
                    let fresh = try Self.pack(items, service)
                    g_object_unref(self.service)
                    (packed, self.service) = fresh
                }
                let connection = connection(of: service)
                let arguments: [DBusValue] = [.string(alias ?? ""), .boolean(replace)]
                // The call holds the batch, and so the service and its connection, until it ends;
                // it lets go of the packed items once sent.
                call = Prefetch(named: "secretctl-import") { [self] () throws(KeychainError) -> OwnedVariant? in
                    defer { packed = nil }
                    let reply = try callPacked(connection, method: Self.packedMethod, arguments: arguments + [.bytes(packed!)]) {
                        () throws(KeychainError) -> OwnedVariant? in
                        // A secretd before the packed call: each item as a value of its own.
                        let argument = try Self.encode(items, service)
                        return try callForReply(
                            connection, interface: SecretServiceNames.Interface.importing, method: "ImportItems",
                            arguments: arguments, encoded: [argument.pointer], absentWhen: noBulk)
                    }
                    switch reply {
                    case .packed(let reply), .values(let reply): return reply
                    case nil: return nil
                    }
                }
            }
        }

        /// Sends the batch unless it was sent, and waits for the reply: how many items secretd
        /// wrote, replaced and skipped; nil when the provider has no such call, or the keyring is
        /// locked or missing (nothing of the batch was written: the caller stores the items one
        /// by one). A provider that went away during the call is asked once more, anew.
        func counts() throws(KeychainError) -> (imported: Int, replaced: Int, skipped: Int)? {
            try send()
            let reply: OwnedVariant?
            do {
                reply = try call!.value()
            } catch let error where isStaleConnection(error) {
                disconnect()
                call = nil
                try send()
                reply = try call!.value()
            }
            guard let reply else { return nil }
            guard let values = DBusValue.makeValue(reply.pointer)?.tuple, values.count == 3,
                case .uint32(let imported) = values[0], case .uint32(let replaced) = values[1], case .uint32(let skipped) = values[2]
            else { throw .protocolError(reason: "the reply to ImportItems does not have the declared type") }
            return (Int(imported), Int(replaced), Int(skipped))
        }

        /// `items` packed for `ImportPackedItems` with `service`'s session, and `service` referenced.
        private static func pack(_ items: [ImportItem], _ service: UnsafeMutablePointer<SecretService>) throws(KeychainError)
            -> (packed: DBusBytes, service: UnsafeMutablePointer<SecretService>)
        {
            var writer: PackedItems.Writer?
            var sessionPath = ""
            for item in items {
                let value = secretValue(try SecretCoding.buffer(item.secret), contentType: contentType(of: item.secret))
                defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
                guard let floating = secret_service_encode_dbus_secret(service, value) else {
                    throw .protocolError(reason: "no session to send the secrets in")
                }
                let secret = OwnedVariant(sinking: floating)  // (oayays)
                let path = String(cString: g_variant_get_string(child(secret, 0).pointer, nil))
                if writer == nil {
                    sessionPath = path
                    writer = PackedItems.Writer(sessionPath: path, capacity: items.count * 256)
                } else if path != sessionPath {
                    throw .protocolError(reason: "the secrets of one batch were encoded in two sessions")
                }
                let (parameters, encrypted, type) = (child(secret, 1), child(secret, 2), child(secret, 3))
                withBytes(of: parameters) { parameters in
                    withBytes(of: encrypted) { encrypted in
                        writer!.append(
                            label: item.label, attributes: item.attributes, parameters: parameters, value: encrypted,
                            contentType: String(cString: g_variant_get_string(type.pointer, nil)))
                    }
                }
            }
            g_object_ref(service)
            return (writer?.finish() ?? PackedItems.Writer(sessionPath: SecretServiceNames.Path.none).finish(), service)
        }

        /// Child `index` of `tuple`.
        private static func child(_ tuple: OwnedVariant, _ index: Int) -> OwnedVariant {
            OwnedVariant(adopting: g_variant_get_child_value(tuple.pointer, gsize(index)))
        }

        /// Calls `body` with the bytes of the `ay` `array`, valid only for the call.
        private static func withBytes<T>(of array: OwnedVariant, _ body: (UnsafeRawBufferPointer) -> T) -> T {
            var count: gsize = 0
            let base = g_variant_get_fixed_array(array.pointer, &count, 1)
            return body(UnsafeRawBufferPointer(start: base, count: Int(count)))
        }

        /// The content type a secret is sent with: text when it is UTF-8.
        private static func contentType(of secret: Data) -> String {
            String(data: secret, encoding: .utf8) != nil ? SecretCoding.textType : SecretCoding.binaryType
        }

        /// `items` encoded for `ImportItems` with `service`'s session.
        private static func encode(_ items: [ImportItem], _ service: UnsafeMutablePointer<SecretService>) throws(KeychainError) -> OwnedVariant {
            let array = try encodedItems(service, count: items.count) { index throws(KeychainError) in
                let item = items[index]
                return (
                    [
                        SecretServiceNames.Property.itemLabel: .string(item.label),
                        SecretServiceNames.Property.itemAttributes: .stringMap(item.attributes),
                    ], secretValue(try SecretCoding.buffer(item.secret), contentType: contentType(of: item.secret))
                )
            }
            return OwnedVariant(sinking: array)
        }
    }
}

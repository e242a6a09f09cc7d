// A batch of items for secretd's `Import1.ImportItems` (issue 51, point 6): encoded for
// libsecret's session, sent over GDBus on libsecret's connection, written by secretd in one
// transaction. Its call runs on a thread of its own, so that the caller can encode and send
// the next batch while secretd writes this one.

internal import CLibSecret
import DBusValues
import FoundationEssentials
import KeychainCore

extension LibSecret {
    /// One item of an ``ImportBatch``: label, attributes, secret.
    typealias ImportItem = (label: String, attributes: [String: String], secret: Data)

    /// A batch of items for secretd's `ImportItems`, which writes them in one transaction into
    /// the keyring of an alias (the default one when nil): encoded with the session of the
    /// service in use when it is made; ``send()`` starts its call and returns at once;
    /// ``counts()`` waits for the reply.
    final class ImportBatch: @unchecked Sendable {
        private let items: [ImportItem]
        private let alias: String?
        private let replace: Bool
        /// The `a(a{sv}(oayays))` argument, until its call has sent it.
        private var argument: OwnedVariant?
        /// The service whose session encrypted the argument's secrets (referenced while the
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
            (argument, service) = try withService { service throws(KeychainError) in try Self.encode(items, service) }
        }

        deinit { g_object_unref(service) }

        /// Starts the call, unless it was started, and returns without waiting for its reply.
        /// A batch encoded for a service that is no longer the one in use is encoded again.
        func send() throws(KeychainError) {
            guard call == nil else { return }
            try withService { service throws(KeychainError) in
                if argument == nil || self.service != service {
                    let fresh = try Self.encode(items, service)
                    g_object_unref(self.service)
                    (argument, self.service) = fresh
                }
                let connection = connection(of: service)
                let arguments: [DBusValue] = [.string(alias ?? ""), .boolean(replace)]
                // The call holds the batch, and so the service and its connection, until it ends;
                // it lets go of the argument once sent, so that its thousands of values are freed
                // on its own thread rather than the caller's.
                call = Prefetch(named: "secretctl-import") { [self] () throws(KeychainError) -> OwnedVariant? in
                    defer { argument = nil }
                    return try callForReply(
                        connection, interface: SecretServiceNames.Interface.importing, method: "ImportItems",
                        arguments: arguments, encoded: [argument!.pointer], absentWhen: noBulk)
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

        /// `items` encoded for `ImportItems` with `service`'s session, and `service` referenced.
        private static func encode(_ items: [ImportItem], _ service: UnsafeMutablePointer<SecretService>) throws(KeychainError)
            -> (argument: OwnedVariant, service: UnsafeMutablePointer<SecretService>)
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
            g_object_ref(service)
            return (OwnedVariant(sinking: array), service)
        }
    }
}

package import FoundationEssentials
import KeychainCore

/// Items addressed by arbitrary attributes, as `secret-tool` does, for this package's command
/// line (`secretctl store/lookup/clear/search`): not part of the library's public API yet.
package enum KeychainAttributes {
    /// One item found by ``search(_:unlock:loadSecrets:)``.
    package struct Match: Sendable {
        /// Its D-Bus object path.
        package var path: String
        /// Its label.
        package var label: String
        /// Every attribute.
        package var attributes: [String: String]
        /// When it was created and last changed.
        package var created: Date
        /// When it was last changed.
        package var modified: Date
        /// The secret, when it was loaded.
        package var secret: Data?
    }

    /// Stores `secret` under exactly `attributes` (plus `xdg:schema` =
    /// `org.freedesktop.Secret.Generic`, as `secret-tool store` writes), replacing the secret and
    /// label of an item with the same attributes.
    package static func store(
        _ attributes: [String: String], label: String, secret: Data, collection: String?
    ) throws(KeychainError) {
        try validate(attributes)
        try Validation.optionalText(label, field: "label")
        let buffer = try SecretCoding.buffer(secret)
        let contentType = String(data: secret, encoding: .utf8) != nil ? SecretCoding.textType : SecretCoding.binaryType
        var full = attributes
        if full[KeychainAttributeName.schema] == nil { full[KeychainAttributeName.schema] = KeychainAttributeName.genericSchema }
        let same = try LibSecret.search(attributes, in: collection.map(KeychainCollection.init(alias:)), options: .init(unlock: true))
            .filter { ItemIdentity.of($0.attributes) == ItemIdentity.of(full) }
        if let item = same.first {
            if item.isLocked { throw .locked }
            try item.setSecret(buffer, contentType: contentType)
            if item.label != label { try item.setLabel(label) }
            for duplicate in same.dropFirst() { try duplicate.delete() }
        } else {
            try LibSecret.create(
                attributes: full, label: label, secret: buffer, contentType: contentType,
                in: collection.map(KeychainCollection.init(alias:)))
        }
    }

    /// Items having all of `attributes`, most recently changed first; with `unlock` the
    /// provider is asked to unlock locked ones (a prompt), with `loadSecrets` their secrets are
    /// read too.
    package static func search(
        _ attributes: [String: String], in collection: String? = nil, unlock: Bool, loadSecrets: Bool
    ) throws(KeychainError) -> [Match] {
        try validate(attributes, allowEmpty: true)
        return try LibSecret.search(
            attributes, in: collection.map(KeychainCollection.init(alias:)), options: .init(unlock: unlock, loadSecrets: loadSecrets))
            .map { item throws(KeychainError) in
                let secret = loadSecrets ? try item.withSecret { bytes, _ in Data(bytes) } : nil
                return Match(
                    path: item.objectPath, label: item.label, attributes: item.attributes, created: item.created,
                    modified: item.modified, secret: secret)
            }
            .sorted { ($0.modified, $0.path) > ($1.modified, $1.path) }
    }

    /// Stores batches of items (label, attributes, secret) as ``store(_:label:secret:collection:)``
    /// would one by one, but each batch in one transaction of secretd's (`Import1.ImportItems`):
    /// an item whose attributes (`xdg:schema` aside) one holds already, in `collection` or
    /// without it in any keyring, is skipped, or with `replace` gets the new label and secret.
    /// While secretd writes one batch, the next is encoded for the session and, unless one of
    /// its items may be the same item as one of the batch before (``ItemIdentity/asSent(_:)``),
    /// sent: secretd reads and plans it meanwhile. The two then share no item, so the keyring
    /// ends the same whichever secretd writes first, and a batch it refuses can still be stored
    /// one by one after the next was written.
    package final class BatchStore {
        /// One item: label, attributes, secret.
        package typealias Item = (label: String, attributes: [String: String], secret: Data)

        private let batches: [[Item]]
        private let collection: String?
        private let replace: Bool
        /// The next batch, checked and encoded (unless that failed: it is then tried again in
        /// its turn, which reports why), and sent when it may be, while the one before was written.
        private var ahead: (index: Int, batch: LibSecret.ImportBatch)?

        /// Batches `batches` for the keyring of the alias `collection` (the default one when nil).
        package init(_ batches: [[Item]], collection: String?, replace: Bool) {
            self.batches = batches
            self.collection = collection
            self.replace = replace
        }

        /// Stores batch `index` (each batch in turn, from the first). Returns how many were
        /// stored, replaced and skipped; nil when the provider cannot (not secretd, the keyring
        /// locked or missing, an item it refuses), and then nothing of the batch was written.
        package func store(_ index: Int) throws(KeychainError) -> (stored: Int, replaced: Int, skipped: Int)? {
            do {
                let current: LibSecret.ImportBatch
                if let ahead, ahead.index == index {
                    current = ahead.batch
                } else {
                    current = try LibSecret.ImportBatch(KeychainAttributes.prepared(batches[index]), alias: collection, replace: replace)
                }
                ahead = nil
                try current.send()
                if index + 1 < batches.count,
                    let next = try? LibSecret.ImportBatch(KeychainAttributes.prepared(batches[index + 1]), alias: collection, replace: replace)
                {
                    if Self.shareNoItem(batches[index], batches[index + 1]) { try? next.send() }
                    ahead = (index + 1, next)
                }
                guard let counts = try current.counts() else { return nil }
                return (counts.imported, counts.replaced, counts.skipped)
            } catch {
                // A provider that is gone, or a cancelled call, stops the import; anything else
                // (an item refused, over a quota) is left to the one-by-one path, which says which.
                switch error {
                case .noProvider, .cancelled: throw error
                default: return nil
                }
            }
        }

        /// Whether no item of `first` may be the same item as one of `second` once secretd has
        /// placed them (``ItemIdentity/asSent(_:)``).
        static func shareNoItem(_ first: [Item], _ second: [Item]) -> Bool {
            let identities = Set(first.lazy.map { ItemIdentity.asSent($0.attributes) })
            return !second.contains { identities.contains(ItemIdentity.asSent($0.attributes)) }
        }
    }

    /// `items` checked as ``store(_:label:secret:collection:)`` checks one, each with
    /// `xdg:schema` added when it has none.
    private static func prepared(_ items: [BatchStore.Item]) throws(KeychainError) -> [BatchStore.Item] {
        var full: [BatchStore.Item] = []
        full.reserveCapacity(items.count)
        for item in items {
            try validate(item.attributes)
            try Validation.optionalText(item.label, field: "label")
            var attributes = item.attributes
            if attributes[KeychainAttributeName.schema] == nil { attributes[KeychainAttributeName.schema] = KeychainAttributeName.genericSchema }
            full.append((item.label, attributes, item.secret))
        }
        return full
    }

    /// Hands `body` every item having all of `attributes` (in `collection`, or in all), a page
    /// (``pageSize``) at a time with how many there are, read in one call of secretd's a page (`Import1.ReadItems`), with
    /// their secrets when `loadSecrets` (none for a locked item); never unlocks or prompts.
    /// Returns false, having handed nothing, when the provider has no such call.
    package static func forEachPage(
        _ attributes: [String: String], in collection: String? = nil, loadSecrets: Bool,
        _ body: (_ page: [Match], _ total: Int) throws(KeychainError) -> Void
    ) throws(KeychainError) -> Bool {
        try validate(attributes, allowEmpty: true)
        guard let paths = try LibSecret.itemPaths(attributes, alias: collection), !paths.isEmpty else { return true }
        return try LibSecret.readPages(paths, secrets: loadSecrets) { items throws(KeychainError) in
            try body(items.map { item in
                Match(
                    path: item.path, label: item.label, attributes: item.attributes,
                    created: Date(timeIntervalSince1970: TimeInterval(item.created)),
                    modified: Date(timeIntervalSince1970: TimeInterval(item.modified)), secret: item.isLocked ? nil : item.secret)
            }, paths.count)
        }
    }

    /// How many items one bulk call carries (``BatchStore``, ``forEachPage(_:in:loadSecrets:_:)``).
    package static var pageSize: Int { LibSecret.pageSize }

    /// libsecret's own store, as `secret-tool store` makes it: the provider replaces an item
    /// whose attributes match (gnome-keyring: whose attributes include these). For
    /// benchmarks that measure what every libsecret client pays.
    package static func libsecretStore(_ attributes: [String: String], label: String, secret: Data) throws(KeychainError) {
        try validate(attributes)
        try LibSecret.serviceStore(attributes, label: label, secret: try SecretCoding.buffer(secret))
    }

    /// libsecret's own lookup, as `secret-tool lookup` makes it; nil when nothing matches.
    package static func libsecretLookup(_ attributes: [String: String]) throws(KeychainError) -> Data? {
        try validate(attributes)
        return try LibSecret.serviceLookup(attributes)
    }

    /// libsecret's own clear, as `secret-tool clear` makes it; true when an item was deleted.
    package static func libsecretClear(_ attributes: [String: String]) throws(KeychainError) -> Bool {
        try validate(attributes)
        return try LibSecret.serviceClear(attributes)
    }

    /// Deletes every item having all of `attributes`; returns how many.
    package static func clear(_ attributes: [String: String]) throws(KeychainError) -> Int {
        try validate(attributes)
        let found = try LibSecret.search(attributes, in: nil, options: .init())
        for item in found { try item.delete() }
        return found.count
    }

    private static func validate(_ attributes: [String: String], allowEmpty: Bool = false) throws(KeychainError) {
        if attributes.isEmpty && !allowEmpty { throw .invalidInput(.empty(field: "attributes")) }
        for (name, value) in attributes {
            try Validation.text(name, field: "attribute name")
            try Validation.text(value, field: "attribute value", allowEmpty: true)
        }
    }
}

/// A whole keyring read from another provider's files or from a running provider
/// (``KeychainProvider/readKeyring(at:)``), for secretd to take in one go
/// (``KeychainProvider/importKeyring(_:password:)``): its name, label and times, and its items
/// with theirs, which the Secret Service's own calls cannot set.
package struct ImportedKeyring {
    /// The keyring's name, the last part of its object path (`login`).
    package var name: String
    /// The name shown to people.
    package var label: String
    /// When it was created and last changed (seconds since 1970).
    package var created: UInt64
    package var modified: UInt64
    /// Its items.
    package var items: [Item]

    package init(name: String, label: String, created: UInt64, modified: UInt64, items: [Item]) {
        self.name = name
        self.label = label
        self.created = created
        self.modified = modified
        self.items = items
    }

    /// One item; its secret is kept in memory that is wiped when the item goes.
    package struct Item {
        package var label: String
        package var attributes: [String: String]
        let secret: SecretBuffer
        /// The secret's content type (`text/plain` unless the source said otherwise).
        package var contentType: String
        package var created: UInt64
        package var modified: UInt64

        /// An item whose secret is a copy of `secret`.
        package init(
            label: String, attributes: [String: String], secret: UnsafeRawBufferPointer, contentType: String = "text/plain",
            created: UInt64, modified: UInt64
        ) {
            self.label = label
            self.attributes = attributes
            self.secret = SecretBuffer(copying: secret)
            self.contentType = contentType.isEmpty ? "text/plain" : contentType
            self.created = created
            self.modified = modified
        }
    }
}

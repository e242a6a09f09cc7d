// Remembered consent for new readers (schema version 9): the identities the person always
// allowed to read an access group, each bound to the executable it was allowed for.

extension Store {
    /// A reader the person always allowed to read the items of one access group (secretd(1),
    /// CONSENT).
    public struct ReaderConsent: Equatable, Sendable {
        /// The identity, as `secretctl whoami` names it (`exe:/usr/bin/secret-tool`).
        public var identity: String
        /// The access group it may read.
        public var group: String
        /// SHA-256 of the executable it was allowed for; nil: any executable of the identity.
        public var executableDigest: [UInt8]?
        /// When it was allowed (seconds since 1970).
        public var granted: Int64

        /// A consent with these fields.
        public init(identity: String, group: String, executableDigest: [UInt8]?, granted: Int64) {
            self.identity = identity
            self.group = group
            self.executableDigest = executableDigest
            self.granted = granted
        }
    }

    /// Every remembered consent, by identity and group.
    public func readerConsents() throws(StoreError) -> [ReaderConsent] {
        try database.rows(Self.everyReaderConsent) { row in
            ReaderConsent(
                identity: row.text(.identity) ?? "", group: row.text(.accessGroup) ?? "",
                executableDigest: row.blob(.executableDigest), granted: row.integer(.granted) ?? 0)
        }
    }

    /// Remembers `consent`, in place of the one for the same identity and group.
    public func saveReaderConsent(_ consent: ReaderConsent) throws(StoreError) {
        try database.insert([
            ReaderConsentColumn.identity: .text(consent.identity), .accessGroup: .text(consent.group),
            .executableDigest: consent.executableDigest.map { .blob($0) } ?? .null, .granted: .integer(consent.granted),
        ], onConflict: .replace)
    }

    /// Forgets the consent of `identity` for `group`; false when there was none.
    public func removeReaderConsent(identity: String, group: String) throws(StoreError) -> Bool {
        let found = try database.rows(
            "SELECT 1 FROM reader_consents WHERE identity = ? AND access_group = ?", [.text(identity), .text(group)])
        guard !found.isEmpty else { return false }
        try database.run("DELETE FROM reader_consents WHERE identity = ? AND access_group = ?", [.text(identity), .text(group)])
        return true
    }

    private static let everyReaderConsent = Query(
        Selection<ReaderConsentColumn>([.identity, .accessGroup, .executableDigest, .granted]),
        "FROM reader_consents ORDER BY identity, access_group")
}

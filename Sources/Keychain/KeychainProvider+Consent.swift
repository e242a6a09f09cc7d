// secretd's Consent1 interface, for `secretctl consent`: the readers the person always allowed.

extension KeychainProvider {
    /// A reader the person always allowed to read one access group (see secretd(1), CONSENT).
    package struct ReaderConsent: Equatable, Sendable {
        /// Who, as `secretctl whoami` names it.
        package var identity: String
        /// The access group.
        package var group: String
        /// The SHA-256 (hex) of the executable it was allowed for; nil: any executable.
        package var executableDigest: String?
        /// When (seconds since 1970).
        package var granted: Int64
    }

    /// What secretd says of consent for new readers.
    package struct ReaderConsents: Equatable, Sendable {
        /// The remembered consents.
        package var consents: [ReaderConsent]
        /// secretd.conf's `consent` (`no` or `new-readers`).
        package var defaultMode: String
        /// The groups whose new readers are asked.
        package var askingGroups: [String]
    }

    /// secretd's remembered consents and where it asks.
    package static func readerConsents() throws(KeychainError) -> ReaderConsents { try LibSecret.readerConsents() }

    /// Lets `identity` read `group` without asking; the person consents with the login
    /// `password`, or through secretd's prompt when it is nil.
    package static func allowReader(identity: String, group: String, password: [UInt8]?) throws(KeychainError) {
        let buffer = password.map { bytes in bytes.withUnsafeBytes { SecretBuffer(copying: $0) } }
        try LibSecret.allowReader(identity: identity, group: group, password: buffer)
    }

    /// Forgets the consent of `identity` for `group`; false when there was none.
    package static func revokeReader(identity: String, group: String) throws(KeychainError) -> Bool {
        try LibSecret.revokeReader(identity: identity, group: group)
    }
}

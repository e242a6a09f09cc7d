extension Migrations {
    /// Steps after the shipped ones: none. make e2e builds a "newer" secretd from this version's
    /// source with this file replaced by one step that adds a table (scripts/deb.sh,
    /// DEB_NEWER_SECRETD), so that a real package downgrade can be tried: the older secretd must
    /// refuse the newer database and leave it as it is, and the upgrade again must open it.
    static let unreleased: [Step] = []
}

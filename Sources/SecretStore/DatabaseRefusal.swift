/// Why secretd will not use the database file it found at start, and what the person can do
/// about it. secretd leaves such a file exactly as it was: it writes nothing to it, folds no
/// write-ahead log into it and never creates an empty keyring in its place.
public struct DatabaseRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// What is wrong with the file.
    public enum Reason: Equatable, Sendable {
        /// SQLite cannot read it as a database, or its quick check fails; what SQLite said.
        case damaged(String)
        /// A newer secretd wrote it (the package was downgraded): its schema version, and the
        /// newest this secretd reads.
        case newerSchema(found: Int, supported: Int)
    }

    /// The database file.
    public let path: String
    /// What is wrong with it.
    public let reason: Reason

    /// The refusal that `error`, thrown while opening the database at `path`, stands for; nil
    /// for errors that say nothing against the file itself (in use, no space, a directory
    /// that cannot be made).
    public init?(_ error: StoreError, path: String) {
        switch error {
        case .corrupted(let what): reason = .damaged(what)
        case .newerSchema(let found, let supported): reason = .newerSchema(found: found, supported: supported)
        default: return nil
        }
        self.path = path
    }

    /// One line for the journal and for every client: what is wrong, that the file is left as
    /// it is, and what to do. `secretctl restore` does not exist yet, so it names the file.
    public var description: String {
        switch reason {
        case .damaged(let what):
            return "the keyring database \(path) is damaged (\(what)); secretd left it as it is and serves no keyring. "
                + "Move it aside (mv \(path) \(path).damaged, and its -wal file with it if there is one), "
                + "put a backup copy in its place if you have one, then restart secretd "
                + "(systemctl --user restart secretd); without a file there it starts an empty keyring"
        case .newerSchema(let found, let supported):
            return "the keyring database \(path) was written by a newer secretd (schema version \(found); this secretd reads "
                + "versions up to \(supported)); secretd left it as it is and serves no keyring. "
                + "Install the newer secretd again (the package was downgraded), then restart secretd "
                + "(systemctl --user restart secretd)"
        }
    }
}

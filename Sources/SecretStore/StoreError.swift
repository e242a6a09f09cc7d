public import SecretCrypto

/// What can go wrong in the encrypted store. Messages never contain secrets or bound values.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The password does not open the collection's key.
    case wrongPassword
    /// The key that opens the item is not held: its collection is locked.
    case locked
    /// Stored data failed its integrity check (tampered, truncated, or moved to another row).
    case corrupted(String)
    /// The database was written by a newer secretd (its schema version is higher than ours).
    case newerSchema(found: Int, supported: Int)
    /// No collection or item with that identity.
    case notFound
    /// A name, label or value the store refuses (too large, empty, duplicate).
    case invalidInput(String)
    /// SQLite reported an error; `code` is its extended result code.
    case database(code: Int32, message: String)
    /// libgcrypt reported an error, or is unusable.
    case crypto(String)
    /// A file-system problem with the data directory or database file.
    case io(String)
    /// The file system holding the database is full: the write was rolled back, reads go on.
    case noSpace(String)
    /// The file system holding the database has become read-only (the kernel remounts one so
    /// after an error): the write was rolled back, reads go on.
    case readOnly(String)
    /// Another process (another secretd: `pid`, when the kernel names it) uses the data
    /// directory (``DataDirectoryLock``).
    case inUse(pid: Int32?)
    /// The write would take its program, or the database, past a quota (``Store/Quota``);
    /// nothing was written.
    case overQuota(Store.Quota.Limit)
    /// Another connection of this process held the write lock (``ApartWriter``) and the write
    /// was not to wait for it (``Store/failingWritesWhenBusy(_:)``); nothing was written.
    case busy

    /// A one-line description.
    public var description: String {
        switch self {
        case .wrongPassword: return "wrong password"
        case .locked: return "the keyring is locked"
        case .corrupted(let what): return "stored data is corrupted: \(what)"
        case .newerSchema(let found, let supported):
            return "database schema version \(found) is newer than this secretd supports (\(supported))"
        case .notFound: return "no such object"
        case .invalidInput(let what): return "invalid input: \(what)"
        case .database(let code, let message): return "database error \(code): \(message)"
        case .crypto(let message): return "crypto error: \(message)"
        case .io(let message): return message
        case .noSpace(let message): return "disk full: \(message)"
        case .readOnly(let message): return "read-only file system: \(message)"
        case .inUse(let pid): return "the keyring database is in use by another secretd" + (pid.map { " (pid \($0))" } ?? "")
        case .overQuota(let limit): return "over the quota: \(limit)"
        case .busy: return "another write holds the database's write lock"
        }
    }

    /// The store's account of a failed cryptographic operation, with the same message.
    public init(_ error: CryptoError) {
        switch error {
        case .invalidInput(let what): self = .invalidInput(what)
        case .corrupted(let what): self = .corrupted(what)
        case .authenticationFailed: self = .corrupted("authentication failed")
        case .library(let message): self = .crypto(message)
        }
    }

    /// Runs `body`, reporting a cryptographic failure as a store error.
    static func fromCrypto<T>(_ body: () throws(CryptoError) -> T) throws(StoreError) -> T {
        do { return try body() } catch { throw StoreError(error) }
    }
}

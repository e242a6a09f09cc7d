// A client of secretd, as access groups see it.

import KeychainCore

/// A client connection as access groups see it: its identity (looked up once, on its first
/// call), the answers the person gave it in ask and consent prompts, which last as long as it,
/// and what it was last told about a collection's items.
final class Caller {
    /// Who it is.
    let identity: CallerIdentity
    /// Its process id when it was identified (for prompts that name it).
    let pid: Int32
    /// Its command line when it was identified, for the audit trail.
    let command: String?
    /// Ask-mode groups the person allowed it once.
    var allowedOnce: Set<String> = []
    /// Ask-mode groups the person denied it; it is not asked again.
    var denied: Set<String> = []
    /// The `secretctl run` it runs in, if any: it then sees only what the run allows.
    var scope: RunScope?
    /// SHA-256 of the executable it runs, once a group's consent needed it (``ReaderConsents``).
    var executableDigest: [UInt8]?
    /// Whether it has read a property of a collection or an item, as libsecret's collection
    /// and item objects, Seahorse and every client that lists items do when they start: only
    /// such clients are told about items (Announcer). libsecret's one-call API
    /// (store, lookup, clear: what `secret-tool` and most scripts use) reads none, and would
    /// only drop the signals of every other client's writes.
    var watchesItems = false
    /// How many of its calls were refused for what it is (logged up to ``loggedRefusals``).
    var refusals = 0
    /// Refusals of one client that are logged; after them one line says the rest are not, so a
    /// client that keeps calling what it may not cannot flood the journal.
    static let loggedRefusals = 10

    init(identity: CallerIdentity, pid: Int32, command: String? = nil) {
        self.identity = identity
        self.pid = pid
        self.command = command
    }

    /// It, as the audit trail names who asked.
    var accessor: Accessor { Accessor(identity: name, pid: pid, command: command) }

    /// Its name: its run's (`run:NAME`) when it is in one, else its identity's.
    var name: String { scope?.identity ?? identity.description }
}

// A client of secretd, as access groups see it.

import KeychainCore

/// A client connection as access groups see it: its identity (looked up once, on its first
/// call), the answers the person gave it in ask prompts, which last as long as it, and what it
/// was last told about a collection's items.
final class Caller {
    /// Who it is.
    let identity: CallerIdentity
    /// Its process id when it was identified (for prompts that name it).
    let pid: Int32
    /// Ask-mode groups the person allowed it once.
    var allowedOnce: Set<String> = []
    /// Ask-mode groups the person denied it; it is not asked again.
    var denied: Set<String> = []
    /// The collection whose `Items` it was last told were invalidated, while that signal waits
    /// for the commit numbered here (``SecretStore/Store/commitCount``); nil once anything with
    /// values was sent to it since. Another one would tell it nothing new (Daemon+Signals.swift).
    var heldItemsInvalidation: (collection: String, commit: Int)?

    init(identity: CallerIdentity, pid: Int32) {
        self.identity = identity
        self.pid = pid
    }
}

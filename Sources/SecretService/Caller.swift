// A client of secretd, as access groups see it.

import KeychainCore

/// A client connection as access groups see it: its identity (looked up once, on its first
/// call) and the answers the person gave it in ask prompts, which last as long as it.
final class Caller {
    /// Who it is.
    let identity: CallerIdentity
    /// Its process id when it was identified (for prompts that name it).
    let pid: Int32
    /// Ask-mode groups the person allowed it once.
    var allowedOnce: Set<String> = []
    /// Ask-mode groups the person denied it; it is not asked again.
    var denied: Set<String> = []

    init(identity: CallerIdentity, pid: Int32) {
        self.identity = identity
        self.pid = pid
    }
}

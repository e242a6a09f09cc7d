/// Who asked for what the keyring does now: a client of the bus, a login through
/// pam_secretd, an SSH agent client, or secretd itself. The keyring keeps the current one
/// (``Keyring/accessor``) for its subscribers; the audit trail records it with each event.
struct Accessor: Equatable {
    /// Its identity as `secretctl whoami` names it (`exe:/usr/bin/secret-tool`,
    /// `flatpak:org.example.App`), or `secretd`, `pam_secretd`.
    var identity: String
    /// Its process id, when there is a process.
    var pid: Int32?
    /// Its command line, when it could be read.
    var command: String?

    /// secretd itself: timers, locking on idle or suspend, sync rounds, start and stop.
    static let secretd = Accessor(identity: "secretd")
}

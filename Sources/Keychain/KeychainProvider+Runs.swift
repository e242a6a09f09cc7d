// secretd's Runs1 interface, for `secretctl run`.

extension KeychainProvider {
    /// Has secretd begin the run `name` for the PID namespace of process `pid` (a child of this
    /// process in a namespace of its own): the processes in it see only the items `allow` names
    /// (a service, and an account or nil for any) and the items of `group`.
    package static func beginRun(name: String, allow: [(service: String, account: String?)], group: String?, pid: Int32) throws(KeychainError) {
        try LibSecret.beginRun(name: name, allow: allow, group: group, pid: pid)
    }

    /// Has secretd end the run `name`.
    package static func endRun(name: String) throws(KeychainError) { try LibSecret.endRun(name: name) }
}

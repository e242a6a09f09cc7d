import Glibc
import KeychainCore

/// The clients secretd has identified, by unique bus name: the bus vouches for each one's uid
/// and pid, which must be this user's, then /proc names it (``CallerIdentity``). A client is
/// identified on its first call and forgotten when it disconnects.
final class CallerRegistry {
    private var callers: [String: Caller] = [:]
    /// The `secretctl run` scopes a new client may be in.
    let runs = RunScopes()
    /// What is made ready for a new client, off the main loop where it is slow, before its first
    /// call is answered (its executable's hash, for consent); nil: nothing.
    var prepare: ((Caller, _ done: @escaping () -> Void) -> Void)?
    /// Clients whose credentials were asked of the bus, with what waits for the answer.
    private var identifying: [String: [(SecretServiceError?) -> Void]] = [:]

    /// The identified client `sender`, if it is.
    subscript(sender: String) -> Caller? { callers[sender] }

    /// Every identified client.
    var all: Dictionary<String, Caller>.Values { callers.values }

    /// Every identified client with its unique bus name.
    var byName: [String: Caller] { callers }

    /// Records `caller` as the client `sender`, as identifying it would (in-process tests
    /// bring their own).
    func add(_ caller: Caller, as sender: String) {
        callers[sender] = caller
    }

    /// Forgets `sender` (it disconnected).
    func forget(_ sender: String) {
        callers[sender] = nil
    }

    /// The caller behind `sender`, identified now if it is new: this asks the bus and waits,
    /// which only what comes before any method call needs (a property read); method calls are
    /// identified first without stopping the main loop (``identify(_:on:then:)``).
    func caller(_ sender: String, on endpoint: any BusEndpoint) -> Result<Caller, SecretServiceError> {
        if let known = callers[sender] { return .success(known) }
        let receivedAt = CallerIdentity.ticksSinceBoot()
        return identified(sender, credentials: endpoint.credentials(of: sender), receivedAt: receivedAt)
    }

    /// Identifies `sender` without waiting, then runs `body` on the main loop with the refusal,
    /// if any. Returns false, without running `body`, when `sender` is already identified.
    func identify(_ sender: String, on endpoint: any BusEndpoint, then body: @escaping (SecretServiceError?) -> Void) -> Bool {
        if identifying[sender] != nil {
            identifying[sender]?.append(body)
            return true
        }
        if callers[sender] != nil { return false }
        identifying[sender] = [body]
        let receivedAt = CallerIdentity.ticksSinceBoot()
        // Held strongly: the registry lives as long as the daemon, and a weak reference's side
        // table leaked (LeakSanitizer) when secretd stopped with an identification in flight.
        endpoint.credentials(of: sender) { [self] credentials in
            var refusal: SecretServiceError?
            var identified: Caller?
            if self.callers[sender] == nil {
                switch self.identified(sender, credentials: credentials, receivedAt: receivedAt) {
                case .failure(let failure): refusal = failure
                case .success(let caller): identified = caller
                }
            }
            // Calls that arrive meanwhile wait with the first.
            let finish = {
                let waiting = self.identifying.removeValue(forKey: sender) ?? []
                for body in waiting { body(refusal) }
            }
            if let identified, let prepare = self.prepare { prepare(identified, finish) } else { finish() }
        }
        return true
    }

    /// Records the caller behind `sender` from the bus's `credentials`, or refuses it.
    private func identified(
        _ sender: String, credentials: (uid: UInt32, pid: UInt32?)?, receivedAt: UInt64
    ) -> Result<Caller, SecretServiceError> {
        guard let credentials, let pid = credentials.pid else {
            return .failure(.forbidden("secretd cannot tell who \(sender) is"))
        }
        guard credentials.uid == getuid() else {
            Log.warning("refused a call from uid \(credentials.uid): secretd serves uid \(getuid()) only")
            return .failure(.forbidden("secretd serves only its own user"))
        }
        switch CallerIdentity.resolve(pid: Int32(bitPattern: pid), receivedAt: receivedAt) {
        case .success(let identity):
            let caller = Caller(
                identity: identity, pid: Int32(bitPattern: pid),
                command: CallerIdentity.commandLine(pid: Int32(bitPattern: pid)))
            caller.scope = runs.scope(containing: Int32(bitPattern: pid))
            add(caller, as: sender)
            return .success(caller)
        case .failure(let problem):
            Log.warning("refused a call from \(sender): \(problem)")
            return .failure(.forbidden("secretd cannot identify the calling process: \(problem)"))
        }
    }
}

/// The open sessions (`OpenSession`), each owned by the client connection that opened it.
/// A client at its limit (``Limits/sessionsPerClient``) loses its least recently used session
/// to make room, so clients that never close theirs (secretstorage's items do not) keep working.
final class SessionRegistry {
    private var sessions: [Int: Session] = [:]
    /// The ids of each client's sessions.
    private var byOwner: [String: Set<Int>] = [:]
    /// Counts session uses, for closing a client's least recently used one.
    private var useClock: UInt64 = 0
    /// Clients told (in the log) that they reached the limit.
    private var toldAtLimit: Set<String> = []
    private var nextID = 1
    /// How many sessions one client may have.
    let limit: Int

    /// An empty registry with `limit` sessions per client.
    init(limit: Int) {
        self.limit = limit
    }

    /// Adds `session`; returns its object path.
    func add(_ session: Session) -> String {
        var owned = byOwner[session.owner] ?? []
        if owned.count >= limit,
            let oldest = owned.min(by: { (sessions[$0]?.lastUsed ?? 0) < (sessions[$1]?.lastUsed ?? 0) })
        {
            owned.remove(oldest)
            sessions[oldest] = nil
            if toldAtLimit.insert(session.owner).inserted {
                Log.warning("client \(session.owner) has \(limit) sessions open; "
                            + "its least recently used ones are closed as it opens more")
            }
        }
        let id = nextID
        nextID += 1
        useClock += 1
        session.lastUsed = useClock
        sessions[id] = session
        owned.insert(id)
        byOwner[session.owner] = owned
        return ObjectPaths.session(id)
    }

    /// `owner`'s session `id`, marked as just used; nil for another client's or none.
    func session(_ id: Int, of owner: String) -> Session? {
        guard let session = sessions[id], session.owner == owner else { return nil }
        useClock += 1
        session.lastUsed = useClock
        return session
    }

    /// Whether `owner` has session `id` (without marking it used).
    func contains(_ id: Int, of owner: String) -> Bool { sessions[id]?.owner == owner }

    /// Closes session `id`.
    func remove(_ id: Int) {
        guard let session = sessions.removeValue(forKey: id) else { return }
        byOwner[session.owner]?.remove(id)
        if byOwner[session.owner]?.isEmpty == true { byOwner[session.owner] = nil }
    }

    /// Closes every session of a client that left.
    func forget(_ owner: String) {
        for id in byOwner.removeValue(forKey: owner) ?? [] { sessions[id] = nil }
        toldAtLimit.remove(owner)
    }

    /// The ids of the open sessions, in order.
    var ids: [Int] { sessions.keys.sorted() }

    /// How many sessions `owner` has open.
    func count(of owner: String) -> Int { byOwner[owner]?.count ?? 0 }
}

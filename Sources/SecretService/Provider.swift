import KeychainCore
public import FoundationEssentials
import Glibc
import Pinentry
import DBusValues
public import SecretCrypto
public import SecretStore

/// What every object secretd serves shares: the keyring, the clients' sessions and prompts,
/// who the callers are and what the access policy lets them see, the password checks and the
/// clock. ``Daemon`` makes one and serves it on the bus; in-process tests serve it on their own
/// endpoint.
///
/// Runs on the main loop's thread only (the bus connection is driven from it, SDBus.swift).
final class Provider {
    static let loginName = SecretServiceNames.loginCollection
    static let sessionName = SecretServiceNames.sessionCollection

    /// The daemon's settings.
    let options: Daemon.Options
    /// The store, the keys of the unlocked collections, and every change to them, published.
    let keyring: Keyring
    /// What replies and signals wait behind until the writes before them are durable.
    let commitBarrier: CommitBarrier
    /// The bus connection, once the daemon serves (a test's own in in-process tests).
    var server: (any BusEndpoint)!
    /// The clients' open sessions.
    let sessions = SessionRegistry(limit: Limits.sessionsPerClient)
    /// The prompts clients have open.
    let prompts = PromptRegistry(limit: Limits.promptsPerClient)
    /// Every password and PIN check and key derivation: one throttle per keyring, one at a
    /// time, off the main loop.
    let passwordChecks: PasswordChecks
    /// The clock the waits after wrong passwords and `lock-after-idle` are measured on.
    let clock: () -> Date
    /// When a client last called the daemon (for `lock-after-idle`), on ``clock``.
    var lastActivity: Date
    /// Clients identified so far, by unique bus name (forgotten when they disconnect).
    let callers = CallerRegistry()
    /// The access group policy in force.
    var policy = AccessPolicy()
    /// The label and attributes of the item whose properties were read last, while the store
    /// has not changed since: `GetAll` reads an item's properties one at a time
    /// (`BusServer.properties`: six, three of which need the item opened), and a client reads
    /// them item after item.
    var recentItem: ItemDescription?
    /// The login keyring's PIN slot, in memory only.
    let quickUnlock: QuickUnlock
    /// Why the TPM slot did not unlock the login keyring at start (nil: it did, or there is none).
    var tpmFailure: String?
    /// Sync between the person's machines: the synced collections' clocks, states and rounds.
    let sync: SyncCoordinator
    /// The portal frontend's requests waiting for the person to unlock the keyring, by handle.
    var portalRequests: [String: PortalRequest] = [:]
    /// The login keyring: what pam_secretd.so's login password does to it.
    private(set) lazy var loginKeyring = LoginKeyring(provider: self)
    /// The audit trail (`secretctl audit`); it follows the keyring from the start, so an unlock
    /// at start (`--unlock`) is in it.
    let audit: AuditTrail
    /// Consent for new readers: who the person allowed to read which group (`secretctl consent`).
    let consents: ReaderConsents
    /// Where large items are sealed, off the main loop.
    let sealing: SealingQueue
    /// The items of import batches planned and not yet written (``ItemBatchWrite``).
    let batchesInFlight = BatchesInFlight()
    /// Where slow work runs off the loop, and how loop work cut into turns waits for the next.
    let offLoop: OffLoop
    /// The automatic backups secretd.conf asks for (taken on ``Daemon``'s timer).
    private(set) lazy var automaticBackups = AutomaticBackups(provider: self)

    /// What ``recentItem`` keeps: no secret, only what an unlocked item's properties show.
    struct ItemDescription {
        /// The item.
        var itemID: Int64
        /// ``Store/changeCount`` when it was read.
        var changeCount: Int64
        /// Its label.
        var label: String
        /// Its attributes.
        var attributes: [String: String]
    }

    /// Serves `store` (which the caller opened) and prepares its session collection; on `clock`,
    /// with key derivations run by `offLoop` (in-process tests move the clock by hand and derive
    /// in place).
    init(options: Daemon.Options, store: Store, clock: @escaping () -> Date, offLoop: OffLoop) throws(StoreError) {
        self.options = options
        self.clock = clock
        lastActivity = clock()
        quickUnlock = QuickUnlock(parameters: options.kdf)
        keyring = Keyring(store: store)
        commitBarrier = CommitBarrier(store: store)
        sync = SyncCoordinator(
            keyring: keyring, dataDirectory: options.dataDirectory, interval: options.configuration.syncInterval)
        passwordChecks = PasswordChecks(keyring: keyring, clock: clock, offLoop: offLoop)
        sealing = SealingQueue(offLoop: offLoop, gate: keyring.apartWrites)
        self.offLoop = offLoop
        audit = AuditTrail(
            keyring: keyring, commitBarrier: commitBarrier, clock: clock, keepDays: options.configuration.auditKeepDays)
        consents = ReaderConsents(keyring: keyring, defaultMode: options.configuration.readerConsent)
        callers.prepare = { [weak self] caller, done in
            guard let self, consents.isInForce(in: policy) else { return done() }
            consents.prepareDigest(of: caller, offLoop: offLoop, then: done)
        }
        try resetSessionCollection()
        // A bad policy at start leaves the empty one: named groups are closed to everyone.
        reloadPolicy(reason: "at start")
    }

    /// The session collection lives only as long as this process: its key is random and never
    /// stored, so whatever it held before a restart is unreadable and is deleted here.
    func resetSessionCollection() throws(StoreError) {
        if let old = try keyring.collection(named: Self.sessionName) { try keyring.deleteCollection(old) }
        _ = try keyring.createCollection(
            name: Self.sessionName, label: "Session",
            key: try NewCollectionKey(password: Gcrypt.randomKey(), parameters: .testing))
    }

    /// Deletes the session collection as the daemon stops. Its key lives only in this process,
    /// so its items are unreadable once it ends, and the next start deletes whatever it finds
    /// of it (``resetSessionCollection()``) before it serves. Deleted here, the next
    /// start finds nothing to delete: that delete reads every item row (items have no index by
    /// collection), 0.1 s of every start at 100,000 items. Not through the keyring, whose
    /// clients are gone: no signal is sent. A failure leaves it to the next start.
    func deleteSessionCollectionAtStop() {
        do throws(StoreError) {
            guard let session = try keyring.store.collection(named: Self.sessionName) else { return }
            try keyring.store.deleteCollection(session)
            try keyring.store.commitPending()
        } catch {
            Log.warning("cannot delete the session keyring as secretd stops (\(error)); the next start deletes it")
        }
    }

    /// Unlocks the login collection with `password`, creating it (and the `default` alias) when
    /// there is none; for `--unlock` and the `login-password` credential, before ``start``.
    /// Returns false after logging when the password is wrong.
    @discardableResult
    func unlockLogin(password: SecureBytes) throws(StoreError) -> Bool {
        guard let login = try keyring.collection(named: Self.loginName) else {
            try loginKeyring.create(password: password)
            return true
        }
        do {
            try keyring.unlock(login, password: password)
        } catch .wrongPassword {
            Log.warning("the password given at start does not unlock the login keyring; it stays locked")
            return false
        }
        if try keyring.aliases()["default"] == nil { try keyring.setAlias("default", to: login) }
        return true
    }

    /// Serves calls through `endpoint` from now on: replies wait for the commit of their
    /// writes, and the keyring's changes are told to the clients (``Announcer``; sync follows
    /// them itself).
    /// ``Daemon/start(ready:refused:)`` calls it with the bus connection; in-process tests with their
    /// own endpoint.
    func serve(on endpoint: any BusEndpoint) {
        server = endpoint
        commitBarrier.holdCommits()
        // The login password root set while the login keyring was locked, before the keyring
        // is announced unlocked.
        keyring.subscribe { [weak self] event in
            if case .unlocked(let collection) = event { self?.loginKeyring.takePasswordSetByRoot(collection) }
        }
        let announcer = Announcer(provider: self)
        keyring.subscribe { event in announcer.follow(event) }
    }

    /// The object paths of every collection: the service's `Collections`.
    func collectionPaths() -> [String] {
        ((try? keyring.collections()) ?? []).map { ObjectPaths.collection($0.name) }
    }

    // MARK: - Locking on idle

    /// Locks every keyring when no call or login came for `lock-after-idle` seconds (0: never).
    func lockIfIdle() {
        let limit = options.configuration.lockAfterIdle
        guard limit > 0, clock().timeIntervalSince(lastActivity) >= Double(limit) else { return }
        lockAll(reason: "after \(limit) s idle")
    }

    /// Locks every unlocked keyring except the session one. Their after-first-unlock items
    /// stay readable unless `keepingAfterFirstUnlock` is false (`secretctl lock --all`).
    func lockAll(reason: String, keepingAfterFirstUnlock: Bool = true) {
        for collection in keyring.lockAll(keepingAfterFirstUnlock: keepingAfterFirstUnlock) {
            Log.info("locked the \(collection.name) keyring \(reason)" + (keepingAfterFirstUnlock ? "" : ", after-first-unlock items too"))
        }
    }

    // MARK: - Clients

    /// Forgets what a client that left the bus had: its sessions, prompts, portal requests and
    /// identity.
    func clientDisconnected(_ name: String) {
        sessions.forget(name)
        for (id, prompt) in prompts.removeAll(of: name) {
            if prompt.started && !prompt.finished {
                Log.info("the client of prompt \(id) disconnected; its pinentry is closed")
            }
            prompt.cancellation.cancel()
            if !prompt.finished {
                prompt.finished = true
                prompt.completion?(nil)  // a portal request: its descriptor is closed, its call answered
            }
        }
        portalRequests = portalRequests.filter { $0.value.owner != name }
        callers.forget(name)
        callers.runs.endAll(of: name)
    }

    /// Adds a prompt, unless its client already has ``Limits/promptsPerClient`` of them.
    func addPrompt(_ prompt: Prompt) -> Result<String, SecretServiceError> {
        prompts.add(prompt)
    }

    /// The caller's session at `path`; `NoSession` for a bogus path or another client's session.
    func session(at path: String, for sender: String) -> Result<Session, SecretServiceError> {
        guard case .session(let id) = ObjectPaths.parse(path), let session = sessions.session(id, of: sender) else {
            return .failure(.noSession("the session \(path) does not exist"))
        }
        return .success(session)
    }

    /// Decodes a `(oayays)` secret sent by `sender`.
    func decodeSecret(_ value: DBusValue, from sender: String) -> Result<(SecureBytes, String), SecretServiceError> {
        sentSecret(value, from: sender).flatMap { sent in sent.decode().map { ($0, sent.contentType) } }
    }

    /// A `(oayays)` secret sent by `sender`, checked against its session and the size limit,
    /// to be decoded (``SentSecret/decode()``) on the loop or off it.
    func sentSecret(_ value: DBusValue, from sender: String) -> Result<SentSecret, SecretServiceError> {
        guard let fields = value.tuple, fields.count == 4, let path = fields[0].objectPath, let parameters = fields[1].bytes,
            let bytes = fields[2].bytes, let contentType = fields[3].string
        else { return .failure(.invalidArgs("a secret must be (oayays)")) }
        return session(at: path, for: sender).flatMap { session in
            sentSecret(parameters: parameters, value: bytes, contentType: contentType, in: session)
        }
    }

    /// A secret sent in `session` as its parameters, value and content type, checked against
    /// the size limit.
    func sentSecret(parameters: DBusBytes, value: DBusBytes, contentType: String, in session: Session)
        -> Result<SentSecret, SecretServiceError>
    {
        guard value.count <= KeychainLimits.secretSize + 32 else {
            return .failure(.invalidArgs("the secret is larger than \(KeychainLimits.secretSize) bytes"))
        }
        return .success(SentSecret(
            algorithm: session.algorithm, parameters: parameters, value: value, contentType: contentType.isEmpty ? "text/plain" : contentType))
    }

    // MARK: - Lookup

    /// The collection at a collection or alias path.
    func collection(at path: String) -> Store.CollectionRecord? {
        switch ObjectPaths.parse(path) {
        case .collection(let name): return try? keyring.collection(named: name)
        case .alias(let alias): return resolveAlias(alias)
        default: return nil
        }
    }

    /// How much each program may store and how large the database may grow (secretd.conf).
    var quota: Store.Quota { options.configuration.quota }

    /// The collection an alias points at.
    func resolveAlias(_ alias: String) -> Store.CollectionRecord? {
        if alias == Self.sessionName { return try? keyring.collection(named: Self.sessionName) }
        guard let name = (try? keyring.aliases())?[alias] else { return nil }
        return try? keyring.collection(named: name)
    }

    /// The item and its collection at an item path.
    func item(at path: String) -> (Store.ItemRecord, Store.CollectionRecord)? {
        guard case .item(let collectionName, let id) = ObjectPaths.parse(path),
            let collection = try? keyring.collection(named: collectionName), let item = try? keyring.item(id: id),
            item.collectionID == collection.id
        else { return nil }
        return (item, collection)
    }

    /// The items with all of `attributes`, in `collection` or in every collection. None when
    /// there are more attributes than an item may have (which also keeps the query within
    /// SQLite's expression depth).
    func searchItems(
        _ attributes: [String: String], in collection: Store.CollectionRecord? = nil
    ) throws(StoreError) -> [Store.ItemRecord] {
        guard attributes.count <= KeychainLimits.attributeCount + 1 else { return [] }  // + the access group
        return try keyring.search(attributes, in: collection)
    }

    // MARK: - Committing

    /// Commits the waiting writes now (``CommitBarrier/commit()``), as the barrier does before
    /// it replies; in-process tests call it after each call.
    func commitPending() -> SecretServiceError? { commitBarrier.commit() }
}

/// Sizes the daemon refuses to exceed (documented in secretd(1), LIMITS).
enum Limits {
    /// Sessions one client connection may have open; opening more closes its least recently
    /// used one (so clients that never close theirs, as secretstorage's items do, keep working).
    static let sessionsPerClient = 256
    /// Prompts one client connection may have waiting; more are refused with `LimitsExceeded`.
    static let promptsPerClient = 32
    /// Calls one client connection may have waiting for their reply (of them, calls sent with
    /// `NO_REPLY_EXPECTED`), and all of them together, when secretd may have `openFiles`
    /// descriptors open; more are refused at once with `LimitsExceeded`. A call waits in
    /// secretd while its new client is being identified or its reply waits for a commit.
    static func callQuota(openFiles: Int) -> CallQuota.Limits {
        CallQuota.Limits(
            calls: 4096, silentCalls: 256, bytes: 64 << 20,
            allClients: CallQuota.Limits.descriptorBound(openFiles: openFiles),
            roomForFewCalls: CallQuota.Limits.roomForFewCallsBound)
    }
    // The sizes of secrets, texts and attribute lists are KeychainLimits' (KeychainCore), which
    // the library checks too.
}

import KeychainCore
public import FoundationEssentials
import Glibc
import Pinentry
import DBusValues
public import SecretCrypto
public import SecretStore

/// The Secret Service provider: the D-Bus objects over the encrypted store.
///
/// Runs on the main loop's thread only (the bus connection is driven from it, SDBus.swift).
/// Method handlers live in the `Daemon+*.swift` files, one per interface.
public final class Daemon: BusHandler {
    /// Daemon settings from the command line.
    public struct Options {
        /// Where the database lives.
        public var dataDirectory: URL
        /// Argon2id cost for new and re-wrapped keyrings.
        public var kdf: KDFParameters
        /// Take the bus name from another provider.
        public var replace: Bool
        /// The name to own: `org.freedesktop.secrets`, or another for a secretd that serves
        /// beside the provider that owns it (`secretctl import secret-service`), which does not
        /// listen for the login password either.
        public var busName: String
        /// Settings from `secretd.conf`.
        public var configuration: Configuration
        /// Where `secretd.conf` and `access-groups.conf` live; nil: no access group policy.
        public var configDirectory: URL?
        /// `$XDG_RUNTIME_DIR`, where secretd listens for the login password when systemd did not
        /// pass it `secretd.socket`; nil: only systemd's socket.
        public var runtimeDirectory: String?

        /// Creates options.
        public init(
            dataDirectory: URL, kdf: KDFParameters = .standard, replace: Bool = false,
            busName: String? = nil,
            configuration: Configuration = Configuration(), configDirectory: URL? = nil, runtimeDirectory: String? = nil
        ) {
            self.dataDirectory = dataDirectory
            self.busName = busName ?? SecretServiceNames.busName
            self.runtimeDirectory = runtimeDirectory
            self.configDirectory = configDirectory
            self.kdf = kdf
            self.replace = replace
            self.configuration = configuration
        }
    }

    static let loginName = SecretServiceNames.loginCollection
    static let sessionName = SecretServiceNames.sessionCollection

    let options: Options
    /// Keeps other secretd processes off the data directory while this one runs.
    private let dataLock: DataDirectoryLock
    /// The store, the keys of the unlocked collections, and every change to them, published.
    let keyring: Keyring
    /// The database, for reading (changes go through ``keyring``).
    var store: Store { keyring.store }
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
    /// When each collection's `Items` goes out to its watchers.
    let itemsSchedule = ItemsSchedule()
    /// The login keyring's PIN slot, in memory only.
    let quickUnlock: QuickUnlock
    /// Why the TPM slot did not unlock the login keyring at start (nil: it did, or there is none).
    var tpmFailure: String?
    /// Sync between the person's machines: the synced collections' clocks, states and rounds.
    let sync: SyncCoordinator
    /// The portal frontend's requests waiting for the person to unlock the keyring, by handle.
    var portalRequests: [String: PortalRequest] = [:]
    /// systemd-logind's sleep and screen-lock signals, when secretd.conf asks to lock on them.
    private var logindSignals: LogindSignals?
    /// The socket pam_secretd.so hands the login password to, once started.
    private var loginControl: LoginControlSocket?
    /// The SSH agent on `$XDG_RUNTIME_DIR/secretd/ssh-agent`, once started.
    private var sshAgent: SSHAgent?
    /// The login password root set without the old one while the login keyring was locked: the
    /// keyring takes it when it is next unlocked (Daemon+LoginControl). In memory only.
    var loginPasswordSetByRoot: (collectionID: Int64, password: SecureBytes)?

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

    /// Opens the store (refusing a damaged or newer one) and prepares the session collection.
    public convenience init(options: Options) throws(StoreError) {
        try self.init(options: options, clock: PasswordClock.now)
    }

    /// The same, on `clock`, with key derivations run by `offLoop` (in-process tests move the
    /// clock by hand and derive in place).
    init(options: Options, clock: @escaping () -> Date, offLoop: OffLoop = .thread) throws(StoreError) {
        self.options = options
        self.clock = clock
        lastActivity = clock()
        quickUnlock = QuickUnlock(parameters: options.kdf)
        dataLock = try Self.lockDataDirectory(options)
        let store = try Store(directory: options.dataDirectory)
        keyring = Keyring(store: store)
        sync = SyncCoordinator(
            keyring: keyring, dataDirectory: options.dataDirectory, interval: options.configuration.syncInterval)
        passwordChecks = PasswordChecks(store: store, clock: clock, offLoop: offLoop)
        try resetSessionCollection()
        // A bad policy at start leaves the empty one: named groups are closed to everyone.
        reloadPolicy(reason: "at start")
    }

    /// How long a new secretd waits for one that is stopping to let go of the data directory,
    /// and, with `--replace`, for the one it asked to stop.
    static let lockWait = 2.0
    static let replaceWait = 10.0

    /// Takes the data directory's lock (``DataDirectoryLock``). With `--replace`, the secretd
    /// that holds it is asked to stop (SIGTERM), as the owner of the bus name is asked to give
    /// it up; it writes out and closes its database before it lets go.
    private static func lockDataDirectory(_ options: Options) throws(StoreError) -> DataDirectoryLock {
        do {
            return try DataDirectoryLock(directory: options.dataDirectory, wait: options.replace ? 0 : lockWait)
        } catch .inUse(let holder?) where options.replace {
            Log.info("taking over \(options.dataDirectory.path) from secretd pid \(holder)")
            guard kill(holder, SIGTERM) == 0 else {
                throw .io("cannot stop secretd pid \(holder), which uses \(options.dataDirectory.path): \(String(cString: strerror(errno)))")
            }
            return try DataDirectoryLock(directory: options.dataDirectory, wait: replaceWait)
        }
    }

    /// The session collection lives only as long as this process: its key is random and never
    /// stored, so whatever it held before a restart is unreadable and is deleted here.
    private func resetSessionCollection() throws(StoreError) {
        if let old = try store.collection(named: Self.sessionName) { try keyring.deleteCollection(old) }
        _ = try keyring.createCollection(
            name: Self.sessionName, label: "Session",
            key: try NewCollectionKey(password: Gcrypt.randomKey(), parameters: .testing))
    }

    // MARK: - Starting

    /// Unlocks the login collection with `password`, creating it (and the `default` alias) when
    /// there is none; for `--unlock` and the `login-password` credential, before ``start``.
    /// Returns false after logging when the password is wrong.
    @discardableResult
    public func unlockLogin(password: SecureBytes) throws(StoreError) -> Bool {
        guard let login = try store.collection(named: Self.loginName) else {
            try createLoginKeyring(password: password)
            return true
        }
        do {
            keyring.unlocked(login, with: try store.unlock(login, password: password))
        } catch .wrongPassword {
            Log.warning("the password given at start does not unlock the login keyring; it stays locked")
            return false
        }
        if try store.aliases()["default"] == nil { try keyring.setAlias("default", to: login) }
        return true
    }

    /// Connects to the session bus, exports the objects and asks for the bus name.
    /// `ready` runs once the name is ours; `refused` when another provider keeps it.
    public func start(ready: @escaping () -> Void, refused: @escaping (String) -> Void) throws(SecretServiceError) {
        let openFiles = OpenFileLimit.current
        if openFiles < CallQuota.Limits.soundOpenFiles {
            Log.warning(
                "secretd may have only \(openFiles) files open (ulimit -n), not \(CallQuota.Limits.soundOpenFiles): "
                    + "a client sending calls with many file descriptors could use them up; "
                    + "raise the hard limit (systemd's DefaultLimitNOFILE=, 524288 unless changed)")
        }
        let busServer = try BusServer(handler: self, quota: Limits.callQuota(openFiles: openFiles))
        serve(on: busServer)
        busServer.watchDisconnects { [weak self] name in self?.clientDisconnected(name) }
        let busName = options.busName
        if busName == SecretServiceNames.busName {
            loginControl = LoginControlSocket(runtimeDirectory: options.runtimeDirectory) { [weak self] request, origin, reply in
                guard let self else { return reply(.failed) }
                self.handleLoginControl(request, origin: origin, reply: reply)
            }
        }
        if busName == SecretServiceNames.busName {
            sshAgent = SSHAgent(keyring: keyring, runtimeDirectory: options.runtimeDirectory, pinentry: options.configuration.pinentry)
        }
        MainLoop.onSignal(SIGHUP) { [weak self] in self?.reloadPolicy(reason: "on SIGHUP") }
        scheduleIdleLock()
        listenToLogind()
        sync.start()
        var acquired = false
        busServer.ownName(busName, replace: options.replace, acquired: {
            acquired = true
            ready()
        }, lost: { [weak busServer] _ in
            if acquired {
                Log.info("another provider took \(busName); exiting")
                MainLoop.quit()
            } else {
                let owner = busServer?.owner(of: busName)
                let who = owner.map { "\($0.uniqueName)" + ($0.pid.map { ", pid \($0)" } ?? "") } ?? "unknown"
                refused("\(busName) is already owned by another provider (\(who)); use --replace to take it over")
            }
        })
    }

    /// Serves calls through `endpoint` from now on: replies wait for the commit of their
    /// writes, and the keyring's changes are told to the clients and to sync.
    /// ``start(ready:refused:)`` calls it with the bus connection; in-process tests with their
    /// own endpoint.
    func serve(on endpoint: any BusEndpoint) {
        server = endpoint
        store.groupsCommits = true
        keyring.subscribe { [weak self] event in self?.follow(event) }
    }

    /// What follows a change to the keyring for the clients: the signals they hear, the items
    /// schedule, and the login password root set while the login keyring was locked. (Sync
    /// follows the keyring itself: ``SyncCoordinator``.)
    private func follow(_ event: KeyringEvent) {
        switch event {
        case .itemCreated(let item, let collection):
            announceCreated(item, in: collection)
        case .itemChanged(let before, let after, let label, let attributes, let collection):
            announceChanged(before, to: after, label: label, attributes: attributes, in: collection)
        case .itemDeleted(let item, let collection):
            announceDeleted(item, in: collection)
        case .collectionCreated(let collection):
            announceCollection(collection, signal: "CollectionCreated")
        case .collectionRelabelled(let collection, let label):
            broadcastProperties(["Label": .string(label)], of: collection)
            server.emitSignal(path: ObjectPaths.service, interface: Introspection.service, name: "CollectionChanged",
                              arguments: [.objectPath(ObjectPaths.collection(collection.name))])
        case .collectionDeleted(let collection):
            itemsSchedule.forget(collection.id)
            announceCollection(collection, signal: "CollectionDeleted")
        case .unlocked(let collection):
            takeLoginPasswordSetByRoot(collection)
            broadcastProperties(["Locked": .boolean(false)], of: collection)
        case .locked(let collection):
            broadcastProperties(["Locked": .boolean(true)], of: collection)
        }
    }

    /// Announces a collection created or deleted (`signal`), then the service's `Collections`.
    private func announceCollection(_ collection: Store.CollectionRecord, signal: String) {
        server.emitSignal(
            path: ObjectPaths.service, interface: Introspection.service, name: signal,
            arguments: [.objectPath(ObjectPaths.collection(collection.name))])
        broadcastCollections()
    }

    /// The object paths of every collection: the service's `Collections`.
    func collectionPaths() -> [String] {
        ((try? store.collections()) ?? []).map { ObjectPaths.collection($0.name) }
    }

    /// Broadcasts the service's `Collections` with its value (collections are everyone's to
    /// list): libsecret's service object (Seahorse's list of keyrings) loads its collections
    /// from the proxy's cached `Collections`, which neither `CollectionCreated` nor an
    /// invalidation updates.
    private func broadcastCollections() {
        server.emitPropertiesChanged(
            path: ObjectPaths.service, interface: Introspection.service, changed: ["Collections": .objectPaths(collectionPaths())])
    }

    /// Runs the main loop until SIGTERM/SIGINT or until another provider replaces this one.
    public static func run() {
        BusServer.runMainLoop()
    }

    /// Stops the main loop.
    public static func stop() { MainLoop.quit() }

    /// Ends the daemon's use of its data once ``run()`` has returned: forgets the master keys
    /// and closes the database, which leaves every item in `secretd.sqlite3` itself (no
    /// `-wal` file beside it). Nothing may call the daemon after this.
    public func close() {
        loginControl?.close()
        loginControl = nil
        sshAgent?.close()
        keyring.forgetAllKeys()
        store.close()
    }

    // MARK: - Locking on idle

    /// Checks once a second whether the daemon has been idle for `lock-after-idle` seconds.
    private func scheduleIdleLock() {
        guard options.configuration.lockAfterIdle > 0 else { return }
        MainLoop.after(seconds: 1) { [weak self] in
            guard let self else { return }
            self.lockIfIdle()
            self.scheduleIdleLock()
        }
    }

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

    /// Locks every keyring when logind announces sleep or a screen lock, as `lock-on-suspend`
    /// and `lock-on-screen-lock` ask.
    private func listenToLogind() {
        var events: Set<LogindSignals.Event> = []
        if options.configuration.lockOnSuspend { events.insert(.sleep) }
        if options.configuration.lockOnScreenLock { events.insert(.screenLock) }
        guard !events.isEmpty, options.busName == SecretServiceNames.busName else { return }
        logindSignals = LogindSignals(listeningFor: events) { [weak self] event in
            self?.lockAll(reason: event == .sleep ? "before the machine sleeps" : "as the screen locks")
        }
    }

    // MARK: - Clients

    private func clientDisconnected(_ name: String) {
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
        guard let fields = value.tuple, fields.count == 4, let path = fields[0].objectPath, let parameters = fields[1].bytes,
            let bytes = fields[2].bytes, let contentType = fields[3].string
        else { return .failure(.invalidArgs("a secret must be (oayays)")) }
        guard bytes.count <= KeychainLimits.secretSize + 32 else {
            return .failure(.invalidArgs("the secret is larger than \(KeychainLimits.secretSize) bytes"))
        }
        return session(at: path, for: sender).flatMap { $0.decode(parameters: parameters, value: bytes) }
            .flatMap { secret in
                secret.count <= KeychainLimits.secretSize
                    ? .success((secret, contentType.isEmpty ? "text/plain" : contentType))
                    : .failure(.invalidArgs("the secret is larger than \(KeychainLimits.secretSize) bytes"))
            }
    }

    // MARK: - Lookup

    /// The collection at a collection or alias path.
    func collection(at path: String) -> Store.CollectionRecord? {
        switch ObjectPaths.parse(path) {
        case .collection(let name): return try? store.collection(named: name)
        case .alias(let alias): return resolveAlias(alias)
        default: return nil
        }
    }

    /// How much each program may store and how large the database may grow (secretd.conf).
    var quota: Store.Quota { options.configuration.quota }

    /// The collection an alias points at.
    func resolveAlias(_ alias: String) -> Store.CollectionRecord? {
        if alias == Self.sessionName { return try? store.collection(named: Self.sessionName) }
        guard let name = (try? store.aliases())?[alias] else { return nil }
        return try? store.collection(named: name)
    }

    /// The item and its collection at an item path.
    func item(at path: String) -> (Store.ItemRecord, Store.CollectionRecord)? {
        guard case .item(let collectionName, let id) = ObjectPaths.parse(path),
            let collection = try? store.collection(named: collectionName), let item = try? store.item(id: id),
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
        return try store.search(attributes, in: collection)
    }

    // MARK: - BusHandler

    func handle(_ call: MethodCall) -> Result<DBusValue, SecretServiceError> {
        lastActivity = clock()
        return admitted(call).flatMap { admitted, handler in
            guard case .now(let answer) = handler else { return .failure(.failed("\(call.method) answers later")) }
            return Result { () throws(SecretServiceError) in try answer(self, admitted) }
        }
    }

    func handle(_ call: MethodCall, replyLater reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        lastActivity = clock()
        switch admitted(call) {
        case .failure(let refusal):
            reply(.failure(refusal))
        case .success((let admitted, .now(let answer))):
            reply(Result { () throws(SecretServiceError) in try answer(self, admitted) })
        case .success((let admitted, .later(let answer))):
            do throws(SecretServiceError) {
                try answer(self, admitted, reply)
            } catch {
                reply(.failure(error))
            }
        }
    }

    /// `call` checked against its method's caller rule, with the object it reaches, and the
    /// method's handler (its declaration's, ``Introspection``).
    private func admitted(_ call: MethodCall) -> Result<(AdmittedCall, MethodHandler), SecretServiceError> {
        guard let method = Introspection.interfaces[call.interface]?.method(call.method) else {
            return .failure(.unknownMethod("no method \(call.method) in \(call.interface)"))
        }
        return admit(call).map { target in (AdmittedCall(call: call, target: target), method.handler) }
    }

    func property(_ name: String, interface: String, path: String, sender: String) -> Result<DBusValue, SecretServiceError> {
        propertyReader(interface: interface, path: path, sender: sender).flatMap { read in read(name) }
    }

    func properties(_ names: [String], interface: String, path: String, sender: String)
        -> Result<[(name: String, value: DBusValue)], SecretServiceError>
    {
        propertyReader(interface: interface, path: path, sender: sender).map { read in
            names.compactMap { name in (try? read(name).get()).map { (name, $0) } }
        }
    }

    /// What reads the properties of the object at `path` for `sender`, the object looked up
    /// once; `NoSuchObject` when there is none it may see.
    private func propertyReader(interface: String, path: String, sender: String)
        -> Result<(String) -> Result<DBusValue, SecretServiceError>, SecretServiceError>
    {
        if case .failure(let refusal) = caller(sender) { return .failure(refusal) }
        let kind = ObjectPaths.parse(path).kind
        guard let declaration = Introspection.interfaces[interface], declaration.objects == kind else {
            return .failure(.noSuchObject("no property at \(path)"))
        }
        let target: PropertyRead.Target
        switch kind {
        case .service: target = .service
        case .portal: target = .portal
        case .collection:
            guard let collection = collection(at: path) else { return .failure(.noSuchObject("no collection \(path)")) }
            callers[sender]?.watchesItems = true
            target = .collection(collection)
        case .item:
            guard let (item, collection, access) = visibleItem(at: path, for: sender) else {
                return .failure(.noSuchObject("no item \(path)"))
            }
            callers[sender]?.watchesItems = true
            target = .item(item, collection, access)
        case .session, .prompt, .portalRequest, nil:
            return .failure(.noSuchObject("no property at \(path)"))
        }
        let read = PropertyRead(target: target, sender: sender)
        return .success { [unowned self] name in
            guard let property = declaration.property(name) else { return .failure(.unknownProperty("no property \(name) at \(path)")) }
            return Result { () throws(SecretServiceError) in try property.read(self, read) }
        }
    }

    func setProperty(_ name: String, interface: String, path: String, value: DBusValue, sender: String) -> SecretServiceError? {
        lastActivity = clock()
        guard let declaration = Introspection.interfaces[interface], let setter = declaration.property(name)?.setter else {
            return .propertyReadOnly("\(interface).\(name) cannot be written")
        }
        guard declaration.objects == ObjectPaths.parse(path).kind else { return .noSuchObject("no writable property \(name) at \(path)") }
        switch admit(sender: sender, path: path, interface: interface, member: "Set(\(name))", rule: setter.rule) {
        case .failure(let refusal):
            return refusal
        case .success(let target):
            do throws(SecretServiceError) {
                try setter.write(self, PropertyWrite(target: target, value: value, sender: sender))
                return nil
            } catch {
                return error
            }
        }
    }

    func children(of path: String, sender: String) -> [String] {
        switch path {
        case ObjectPaths.service: return ["aliases", "collection", "prompt", "session"]
        case ObjectPaths.aliasPrefix:
            return Array(((try? store.aliases()) ?? [:]).keys) + [Self.sessionName]
        case ObjectPaths.sessionPrefix: return sessions.ids.map { "s\($0)" }
        case ObjectPaths.promptPrefix: return prompts.ids.map { "p\($0)" }
        case ObjectPaths.collectionPrefix: return ((try? store.collections()) ?? []).map(\.name)
        default:
            guard let collection = collection(at: path) else { return [] }
            return visible((try? store.search([:], in: collection)) ?? [], for: sender).map { String($0.0.id) }
        }
    }

    var hasPendingCommit: Bool { store.hasPendingCommit }

    func commitPending() -> SecretServiceError? {
        do throws(StoreError) {
            try store.commitPending()
            return nil
        } catch {
            Log.error("cannot commit to the database: \(error); the last changes were rolled back")
            switch error {
            case .noSpace: return SecretServiceError(storeFailure: error)
            default: return .incomplete
            }
        }
    }

    func objectExists(at path: String, sender: String) -> Bool {
        switch ObjectPaths.parse(path) {
        case .service: return true
        case .collection, .alias: return collection(at: path) != nil
        case .item: return visibleItem(at: path, for: sender) != nil
        case .session(let id): return sessions.contains(id, of: sender)
        case .prompt(let id): return prompts[id]?.owner == sender
        case .portal: return true
        case .portalRequest(let handle): return portalRequests[handle]?.owner == sender
        case .unknown: return false
        }
    }

    func interfaces(at path: String) -> [String] {
        ObjectPaths.parse(path).kind.map(Introspection.interfaces(of:)) ?? []
    }
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

import KeychainCore
public import FoundationEssentials
import Glibc
public import SecretCrypto
public import SecretStore

/// secretd: takes the data directory, opens the store, and serves its ``Provider`` on the
/// session bus and to pam_secretd.so's login socket; locks on idle and on logind's signals;
/// stops. Everything a client reaches is the provider's (the D-Bus objects are declared in
/// ``Introspection/all``, one file each).
public final class Daemon {
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

    let options: Options
    /// Keeps other secretd processes off the data directory while this one runs.
    private let dataLock: DataDirectoryLock
    /// The database, opened here and closed by ``close()``.
    private let store: Store
    /// The objects served, and what they share.
    let provider: Provider
    /// What answers the bus server's calls (the server holds it weakly).
    private let router: CallRouter
    /// systemd-logind's sleep and screen-lock signals, when secretd.conf asks to lock on them.
    private var logindSignals: LogindSignals?
    /// The socket pam_secretd.so hands the login password to, once started.
    private var loginControl: LoginControlSocket?
    /// The SSH agent on `$XDG_RUNTIME_DIR/secretd/ssh-agent`, once started.
    private var sshAgent: SSHAgent?

    /// Takes the data directory, opens the store (refusing a damaged or newer one) and
    /// prepares the session collection.
    public convenience init(options: Options) throws(StoreError) {
        try self.init(options: options, clock: PasswordClock.now)
    }

    /// The same, on `clock`, with key derivations run by `offLoop` (in-process tests move the
    /// clock by hand and derive in place).
    init(options: Options, clock: @escaping () -> Date, offLoop: OffLoop = .thread) throws(StoreError) {
        self.options = options
        dataLock = try Self.lockDataDirectory(options)
        store = try Store(directory: options.dataDirectory)
        if !store.checkedAtStart { Log.info("the database passed its quick check at the last clean stop and is unchanged since: not checked again") }
        provider = try Provider(options: options, store: store, clock: clock, offLoop: offLoop)
        router = CallRouter(provider: provider)
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

    /// Unlocks the login collection with `password`, creating it (and the `default` alias) when
    /// there is none; for `--unlock` and the `login-password` credential, before ``start``.
    /// Returns false after logging when the password is wrong.
    @discardableResult
    public func unlockLogin(password: SecureBytes) throws(StoreError) -> Bool {
        try provider.unlockLogin(password: password)
    }

    /// Unlocks the login keyring from its TPM slot, if it has one and is locked; before
    /// ``start``, so it waits for the TPM. A slot that does not open is logged with what to do,
    /// and the keyring stays locked: its password still opens it.
    public func unlockLoginWithTPM() { TPMObject(provider).unlockLoginWithTPM() }

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
        let busServer = try BusServer(handler: router, quota: Limits.callQuota(openFiles: openFiles))
        provider.serve(on: busServer)
        busServer.watchDisconnects { [weak provider = self.provider] name in provider?.clientDisconnected(name) }
        let busName = options.busName
        if busName == SecretServiceNames.busName {
            loginControl = LoginControlSocket(runtimeDirectory: options.runtimeDirectory) { [weak self] request, origin, reply in
                guard let self else { return reply(.failed) }
                self.provider.keyring.apartWrites.whenWriteEnds { [weak self] in
                    guard let self else { return reply(.failed) }
                    self.provider.loginKeyring.handle(request, origin: origin, reply: reply)
                }
            }
        }
        if busName == SecretServiceNames.busName {
            sshAgent = SSHAgent(
                keyring: provider.keyring, commitBarrier: provider.commitBarrier, runtimeDirectory: options.runtimeDirectory,
                pinentry: options.configuration.pinentry, policy: { [weak provider = self.provider] in provider?.policy ?? AccessPolicy() },
                verifyPassword: { [weak provider = self.provider] password, done in
                    guard let provider else { return done("secretd is stopping") }
                    provider.verifyLoginPassword(password) { result in
                        if case .failure(let error) = result { done(error.message) } else { done(nil) }
                    }
                }, runs: provider.callers.runs)
            // The runs in force outlive a restart of secretd (they end with their namespace).
            if let runtime = options.runtimeDirectory, runtime.hasPrefix("/") {
                let directory = URL(fileURLWithPath: runtime).appendingPathComponent("secretd")
                mkdir(directory.path, 0o700)
                provider.callers.runs.keep(in: directory.appendingPathComponent("runs.json"))
            }
        }
        MainLoop.onSignal(SIGHUP) { [weak provider = self.provider] in provider?.reloadPolicy(reason: "on SIGHUP") }
        scheduleIdleLock()
        scheduleAutomaticBackups(after: Self.firstBackupDelay)
        listenToLogind()
        provider.sync.start()
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
        provider.audit.stop()
        provider.keyring.forgetAllKeys()
        provider.deleteSessionCollectionAtStop()
        if let finding = store.close() {
            Log.error("the database fails its quick check as it closes (\(finding)); the next start will refuse it and say what to do")
        }
    }

    // MARK: - Locking on idle and on logind's signals

    /// Checks once a second whether the daemon has been idle for `lock-after-idle` seconds.
    private func scheduleIdleLock() {
        guard options.configuration.lockAfterIdle > 0 else { return }
        MainLoop.after(seconds: 1) { [weak self] in
            guard let self else { return }
            self.provider.lockIfIdle()
            self.scheduleIdleLock()
        }
    }

    // MARK: - Automatic backups

    /// How long after start the first automatic backup is considered (one older than the
    /// interval, or none, is due then), and how often after that.
    static var firstBackupDelay: Double { testBackupCheckInterval ?? 60 }
    static var backupCheckInterval: Double { testBackupCheckInterval ?? 300 }

    /// The interval a test asked for (``TestHooks/backupCheckInterval``; debug builds only).
    private static var testBackupCheckInterval: Double? {
        #if DEBUG
        if let text = getenv(TestHooks.backupCheckInterval).map({ String(cString: $0) }), let seconds = Double(text), seconds >= 0 {
            return seconds
        }
        #endif
        return nil
    }

    /// Takes an automatic backup whenever one is due (``AutomaticBackups``), checked every
    /// ``backupCheckInterval`` seconds; nothing when `backup-interval` is off.
    private func scheduleAutomaticBackups(after seconds: Double) {
        guard provider.automaticBackups.interval > 0, seconds > 0 else { return }
        MainLoop.after(seconds: seconds) { [weak self] in
            guard let self else { return }
            self.provider.automaticBackups.takeIfDue()
            self.scheduleAutomaticBackups(after: Self.backupCheckInterval)
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
            self?.provider.lockAll(reason: event == .sleep ? "before the machine sleeps" : "as the screen locks")
        }
    }
}

public import Foundation
import Keychain
import KeychainCore

/// One private bus and one provider for this test process, in a temporary HOME/XDG tree.
///
/// The first call to ``shared()`` creates the tree, starts the bus, points this process's
/// `DBUS_SESSION_BUS_ADDRESS` at it (before libsecret connects) and starts the provider chosen
/// by `KEYCHAIN_TEST_PROVIDER` (see ``ProviderCommand/fromEnvironment()``). Only the processes
/// started here are ever stopped; they also end by themselves when the test process exits.
public final class TestEnvironment: @unchecked Sendable {
    /// The temporary directory holding everything (mode 0700).
    public let root: URL
    /// The private bus.
    public let bus: PrivateBus
    /// How the provider is started.
    public let command: ProviderCommand
    /// The environment client commands run with (private bus, temporary HOME and XDG dirs).
    public let clientEnvironment: [String: String]
    /// The clock of secretd's waits after wrong passwords, which tests advance (gnome-keyring
    /// has no such wait and ignores it).
    public let passwordClock: PasswordClockFile

    private let lock = NSLock()
    private var provider: SupervisedProcess?
    private var control: BusConnection

    nonisolated(unsafe) private static var instance: Result<TestEnvironment, any Error>?
    private static let instanceLock = NSLock()

    /// The process-wide environment, started on first use.
    public static func shared() throws -> TestEnvironment {
        instanceLock.lock()
        defer { instanceLock.unlock() }
        if instance == nil {
            instance = Result { try TestEnvironment(command: .fromEnvironment()) }
        }
        return try instance!.get()
    }

    private init(command: ProviderCommand) throws {
        self.command = command
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "keychain-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        root = base
        let home = base.appendingPathComponent("home")
        let runtime = base.appendingPathComponent("run")
        for directory in [base, home, runtime] {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        for sub in [".local/share", ".config", ".cache"] {
            try FileManager.default.createDirectory(
                at: home.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        try Self.writeAccessGroups(in: home.appendingPathComponent(".config/secretd"))
        bus = try PrivateBus(directory: base)
        control = try BusConnection(address: bus.address)
        passwordClock = try PasswordClockFile(in: base)
        clientEnvironment = passwordClock.environment.merging([
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": home.path,
            "XDG_DATA_HOME": home.appendingPathComponent(".local/share").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path,
            "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path,
            "XDG_RUNTIME_DIR": runtime.path,
            "DBUS_SESSION_BUS_ADDRESS": bus.address,
            "LANG": "C.UTF-8",
            TestHooks.backupCheckInterval: "0",  // no automatic backup in the shared provider's data
        ]) { $1 }
        // This process's libsecret must talk to the private bus only, and never autolaunch.
        setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
        unsetenv("DISPLAY")
        unsetenv("WAYLAND_DISPLAY")
        try startProvider()
        atexit { TestEnvironment.tearDownAtExit() }
    }

    /// The access groups the shared tests use, for secretd (gnome-keyring ignores the file):
    /// this test process and `secret-tool` belong to them, as a user would set it up.
    private static func writeAccessGroups(in directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let secretTool = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/usr/bin/secret-tool"))
            .map { $0.hasPrefix("/") ? $0 : "/usr/bin/" + $0 } ?? "/usr/bin/secret-tool"
        var text = "# The groups the shared provider tests use.\n"
        for group in sharedAccessGroups {
            text += "[group \"\(group)\"]\nmember = exe:\(me)\nmember = exe:\(secretTool)\n"
        }
        let file = directory.appendingPathComponent("access-groups.conf")
        try text.write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o600)
    }

    /// Access groups this test process and `secret-tool` belong to under secretd.
    public static let sharedAccessGroups = ["com.example.mail", "com.example.chat", "com.example.shared"]

    /// Tells the provider to stop. The bus is left to its watchdog, which ends it and removes
    /// the temporary tree right after this process: closing libsecret's bus connection while
    /// the process still runs would make GDBus raise SIGTERM.
    private static func tearDownAtExit() {
        guard case .success(let environment)? = instance else { return }
        environment.provider?.signalStop()
    }

    // MARK: - Provider

    /// Starts the provider and waits (up to 20 s) until it owns `org.freedesktop.secrets`.
    public func startProvider() throws {
        lock.lock()
        defer { lock.unlock() }
        guard provider == nil else { return }
        provider = try launchProvider()
        Keychain.resetConnection()
    }

    /// Stops the provider and waits until the bus name is free.
    public func stopProvider() throws {
        lock.lock()
        defer { lock.unlock() }
        try haltProvider()
        Keychain.resetConnection()
    }

    /// Stops and starts the provider (its data stays; `--unlock` unlocks it again).
    public func restartProvider() throws {
        try stopProvider()
        try startProvider()
    }

    /// Stops and starts the provider without telling the library, as happens when a user
    /// restarts their provider under a running program.
    public func restartProviderKeepingConnection() throws {
        lock.lock()
        defer { lock.unlock() }
        try haltProvider()
        provider = try launchProvider()
    }

    private func launchProvider() throws -> SupervisedProcess {
        let process = try SupervisedProcess(
            command.arguments, environment: clientEnvironment, standardInput: Data(command.password.utf8),
            logURL: root.appendingPathComponent("provider.log"))
        try control.waitForOwner(of: Self.busName, startedBy: process)
        return process
    }

    private func haltProvider() throws {
        provider?.stop()
        provider = nil
        try control.waitUntilUnowned(Self.busName)
    }

    /// Locks the collection behind the `default` alias.
    public func lockDefaultCollection() throws {
        guard let path = try control.readAlias("default") else { throw HarnessError("no default collection") }
        try control.lock([path])
    }

    /// Unlocks the collection behind the `default` alias with the login password.
    public func unlockDefaultCollection() throws {
        guard let path = try control.readAlias("default") else { throw HarnessError("no default collection") }
        try control.unlock(path, password: command.password)
    }

    /// What the provider logged so far.
    public var providerLog: String {
        (try? String(contentsOf: root.appendingPathComponent("provider.log"), encoding: .utf8)) ?? ""
    }

    // MARK: - Clients

    /// Runs a client command (argv[0] looked up in `PATH`) in ``clientEnvironment`` plus
    /// `environment`, feeding it `input`; kills it after 60 s so a hang fails instead of blocking.
    public func run(_ arguments: [String], input: Data? = nil, environment: [String: String] = [:]) throws
        -> CommandResult
    {
        try CommandResult.run(arguments, input: input, environment: clientEnvironment.merging(environment) { $1 },
                              scratch: root)
    }

    /// The bus name every Secret Service provider owns.
    public static let busName = SecretServiceNames.busName
}

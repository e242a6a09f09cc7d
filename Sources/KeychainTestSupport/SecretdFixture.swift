public import Foundation
import KeychainCore

/// A private bus of its own with `secretd` processes on it, for tests of the daemon itself
/// (start-up, replacement, restarts, crashes). Independent of ``TestEnvironment``.
public final class SecretdFixture: @unchecked Sendable {
    /// The temporary directory holding everything.
    public let root: URL
    /// The bus.
    public let bus: PrivateBus
    /// A connection for making D-Bus calls in tests.
    public let control: BusConnection
    /// Where the daemons keep their database.
    public let dataDirectory: URL
    /// Where the daemons read `secretd.conf` (created empty).
    public let configDirectory: URL
    /// The environment daemons and clients run with.
    public var environment: [String: String]
    /// The clock of secretd's waits after wrong passwords, which tests advance.
    public let passwordClock: PasswordClockFile

    /// The `secretd` built next to the test bundle.
    public static var secretdPath: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("secretd").path
    }

    /// The `secretctl` built next to the test bundle.
    public static var secretctlPath: String {
        URL(fileURLWithPath: secretdPath).deletingLastPathComponent().appendingPathComponent("secretctl").path
    }

    /// Creates a fresh tree and bus (with a real session bus's limits, see ``PrivateBus``); with
    /// `otherUsers`, clients of other uids may reach the bus; `busDescriptorsPerClient` is
    /// ``PrivateBus``'s `descriptorsPerClient`.
    public init(otherUsers: Bool = false, busDescriptorsPerClient: Int? = nil) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("secretd-tests-\(UUID().uuidString.prefix(12))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let runtime = root.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        dataDirectory = root.appendingPathComponent("data")
        configDirectory = root.appendingPathComponent("config")
        try FileManager.default.createDirectory(at: configDirectory, withIntermediateDirectories: true)
        if otherUsers { chmod(root.path, 0o711) }
        bus = try PrivateBus(directory: root, otherUsers: otherUsers, descriptorsPerClient: busDescriptorsPerClient)
        control = try BusConnection(address: bus.address)
        passwordClock = try PasswordClockFile(in: root)
        environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": root.path, "XDG_RUNTIME_DIR": runtime.path, "DBUS_SESSION_BUS_ADDRESS": bus.address,
            "LANG": "C.UTF-8",
            // No automatic backup in a test's data directory unless the test asks for them.
            TestHooks.backupCheckInterval: "0",
        ].merging(passwordClock.environment) { $1 }
    }

    deinit {
        bus.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// Writes `secretd.conf`.
    public func writeConfiguration(_ text: String) throws {
        try text.write(to: configDirectory.appendingPathComponent("secretd.conf"), atomically: true, encoding: .utf8)
    }

    /// Starts `secretd --foreground --data-dir <data> --config-dir <config>` plus `arguments`, with `input` on its
    /// standard input; with `waitForName`, waits until it owns `org.freedesktop.secrets`.
    @discardableResult
    public func start(_ arguments: [String] = ["--unlock"], input: String? = "login-password", waitForName: Bool = true)
        throws -> SupervisedProcess
    {
        let daemon = try SupervisedProcess(
            [Self.secretdPath, "--foreground", "--data-dir", dataDirectory.path, "--config-dir", configDirectory.path]
                + arguments, environment: environment,
            standardInput: input.map { Data($0.utf8) }, logURL: root.appendingPathComponent("secretd-\(UUID().uuidString.prefix(6)).log"))
        if waitForName { try control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon) }
        return daemon
    }

    /// Waits until nobody owns `org.freedesktop.secrets`.
    public func waitUntilNameIsFree() throws {
        try control.waitUntilUnowned(TestEnvironment.busName)
    }

    /// Runs a client command on this bus.
    public func run(_ arguments: [String], input: String? = nil) throws -> CommandResult {
        try CommandResult.run(arguments, input: input.map { Data($0.utf8) }, environment: environment, scratch: root)
    }

    /// Writes `source` as `name` in the fixture's tree and runs it with `/usr/bin/python3` (the
    /// Debian Python, with jeepney and secretstorage) on this bus, with `arguments`.
    public func runPython(_ source: String, named name: String, _ arguments: [String] = []) throws -> CommandResult {
        let script = root.appendingPathComponent(name)
        try source.write(to: script, atomically: true, encoding: .utf8)
        return try run(["/usr/bin/python3", script.path] + arguments)
    }

    /// Runs one of the shared clients of ``DBusClients`` (`first-call.py`) on this bus, with `arguments`.
    public func runClient(_ name: String, _ arguments: [String] = []) throws -> CommandResult {
        try run(DBusClients.command(name, arguments))
    }

    /// Calls the Secret Service with GVariant-text arguments (see ``BusConnection/call(_:_:_:_:destination:)``).
    public func call(_ path: String, _ interface: String, _ method: String, _ arguments: String = "()") throws -> String {
        try control.call(path, interface, method, arguments)
    }
}

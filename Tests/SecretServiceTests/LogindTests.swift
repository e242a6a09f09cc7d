import Foundation
import KeychainTestSupport
import Testing

/// `lock-on-suspend` and `lock-on-screen-lock`: secretd locks its keyrings when systemd-logind
/// announces sleep or a screen lock of one of the user's sessions, and ignores the same signals
/// from anyone else. logind is `scripts/dbus-clients/fake-logind.py` on a private bus standing
/// in for the system bus (`DBUS_SYSTEM_BUS_ADDRESS`); the booted-Debian test uses the real one.
@Suite struct LogindTests {
    /// A fake logind serving on `bus`; `emit` makes it send a signal and waits until every
    /// other connection on the bus, secretd's among them, has handled it.
    struct FakeLogind {
        let process: SupervisedProcess
        let control: URL
        private static let counter = NSLock()
        nonisolated(unsafe) private static var next = 0

        init(fixture: SecretdFixture, environment: [String: String]) throws {
            control = fixture.root.appendingPathComponent("logind-control")
            try FileManager.default.createDirectory(at: control, withIntermediateDirectories: true)
            process = try SupervisedProcess(DBusClients.command("fake-logind.py", ["serve", control.path]), environment: environment,
                                            logURL: fixture.root.appendingPathComponent("fake-logind.log"))
            let deadline = Date().addingTimeInterval(20)
            while !process.log.contains("ready") {
                guard process.isRunning, Date() < deadline else { throw HarnessError("fake logind did not start: \(process.log)") }
                usleep(50_000)
            }
        }

        func emit(_ what: String) throws {
            let number = Self.counter.withLock { () -> Int in
                Self.next += 1
                return Self.next
            }
            try what.write(to: control.appendingPathComponent("emit-\(number)"), atomically: true, encoding: .utf8)
            let done = control.appendingPathComponent("done-\(number)")
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: done.path) {
                guard process.isRunning, Date() < deadline else { throw HarnessError("fake logind did not emit \(what): \(process.log)") }
                usleep(20_000)
            }
        }
    }

    /// A fixture whose secretd takes a private bus of its own for the system bus.
    static func fixtureWithSystemBus() throws -> (SecretdFixture, PrivateBus) {
        let fixture = try SecretdFixture()
        let directory = fixture.root.appendingPathComponent("system-bus")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let systemBus = try PrivateBus(directory: directory)
        fixture.environment["DBUS_SYSTEM_BUS_ADDRESS"] = systemBus.address
        return (fixture, systemBus)
    }

    static func isLocked(_ fixture: SecretdFixture) throws -> Bool {
        try fixture.call("/org/freedesktop/secrets/collection/login", "org.freedesktop.DBus.Properties", "Get",
                         "('org.freedesktop.Secret.Collection', 'Locked')") == "(<true>,)"
    }

    static func unlock(_ fixture: SecretdFixture) throws {
        let result = try fixture.run([SecretdFixture.secretctlPath, "unlock", "--password-stdin"], input: "login-password")
        try #require(result.status == 0, "\(result.errorOutput)")
    }

    @Test("logind's PrepareForSleep(true) and a Lock of one of the user's sessions lock every keyring; the same signals from an impostor, a wake-up, or another user's session do not")
    func locksOnSleepAndScreenLock() throws {
        let (fixture, systemBus) = try Self.fixtureWithSystemBus()
        defer { systemBus.stop() }
        try fixture.writeConfiguration("lock-on-suspend = yes\nlock-on-screen-lock = yes\n")
        let logind = try FakeLogind(fixture: fixture, environment: fixture.environment)
        defer { logind.process.stop() }
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let me = getuid()

        for impostor in ["sleep", "lock \(me)"] {
            let sent = try fixture.run(DBusClients.command("fake-logind.py", ["impostor", impostor]))
            #expect(sent.text.contains("sent"), "\(sent.errorOutput)")
            #expect(try !Self.isLocked(fixture), "an impostor's \(impostor) locked the keyring")
        }
        try logind.emit("wake")
        #expect(try !Self.isLocked(fixture), "PrepareForSleep(false) locked the keyring")
        try logind.emit("lock \(me + 1)")
        #expect(try !Self.isLocked(fixture), "another user's session lock locked the keyring")

        try logind.emit("sleep")
        #expect(try Self.isLocked(fixture), "\(daemon.log)")
        #expect(daemon.log.contains("locked the login keyring before the machine sleeps"), "\(daemon.log)")
        try Self.unlock(fixture)
        try logind.emit("lock \(me)")
        #expect(try Self.isLocked(fixture), "\(daemon.log)")
        #expect(daemon.log.contains("locked the login keyring as the screen locks"), "\(daemon.log)")
    }

    @Test("with the settings off (the default), logind's signals lock nothing")
    func offByDefault() throws {
        let (fixture, systemBus) = try Self.fixtureWithSystemBus()
        defer { systemBus.stop() }
        let logind = try FakeLogind(fixture: fixture, environment: fixture.environment)
        defer { logind.process.stop() }
        let daemon = try fixture.start()
        defer { daemon.stop() }
        try logind.emit("sleep")
        try logind.emit("lock \(getuid())")
        #expect(try !Self.isLocked(fixture))
    }
}

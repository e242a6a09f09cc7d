import Foundation
import KeychainTestSupport
import Testing

/// pam_secretd.so (pam/pam_secretd.c, built by `make pam`) in PAM stacks that pamtester runs
/// under libpam-wrapper, against the real secretd of a ``SecretdFixture``: no booted system and
/// no /etc/pam.d. The PAM user is the user running the tests (root in CI), so the module talks
/// to secretd in-process; the tests of the forked helper run secretd as nobody.
@Suite(.enabled(if: PAMTools.present, "needs pamtester and libpam-wrapper (make deps)"))
struct PAMModuleTests: SecretServiceCalls {
    static let gnome = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"

    // MARK: - Logging in

    @Test("a first login creates the login keyring from the password, unlocked; auth alone before the session sends nothing")
    func firstLogin() throws {
        let (fixture, daemon, stack) = try start()
        // Auth runs before pam_systemd: secretd is not reachable yet, the password waits for the
        // session, and a handle that opens no session drops it.
        #expect(try stack.login("first-password", operations: ["authenticate"]).status == 0)
        #expect(try loginKeyring(fixture) == .absent)

        let login = try stack.login("first-password")
        #expect(login.status == 0, "\(login.errorOutput)")
        #expect(try loginKeyring(fixture) == .unlocked)
        try lock(fixture)
        #expect(try opens(fixture, "first-password"))
        daemon.stop()
    }

    @Test("a later login's session unlocks the locked login keyring")
    func laterLogin() throws {
        let (fixture, daemon, stack) = try start(password: "login-password")
        try lock(fixture)
        let login = try stack.login("login-password")
        #expect(login.status == 0, "\(login.errorOutput)")
        #expect(try loginKeyring(fixture) == .unlocked)
        daemon.stop()
    }

    @Test("auth alone (a screen locker) unlocks at once when secretd is reachable")
    func screenLocker() throws {
        let (fixture, daemon, stack) = try start(password: "login-password")
        try lock(fixture)
        let unlock = try stack.login("login-password", operations: ["authenticate"], reachableInAuth: true)
        #expect(unlock.status == 0, "\(unlock.errorOutput)")
        #expect(try loginKeyring(fixture) == .unlocked)
        daemon.stop()
    }

    @Test("a password PAM refuses fails the login and sends nothing")
    func refusedPassword() throws {
        let (fixture, daemon, stack) = try start()
        let login = try stack.login("wrong-password", accepted: "right-password", reachableInAuth: true)
        #expect(login.status == 1)
        #expect(login.errorOutput.contains("Authentication failure"), "\(login.errorOutput)")
        #expect(try loginKeyring(fixture) == .absent)
        daemon.stop()
    }

    @Test("a password that does not open the keyring leaves it locked and unchanged, and the login succeeds")
    func passwordThatDoesNotOpen() throws {
        let (fixture, daemon, stack) = try start(password: "keyring-password")
        try lock(fixture)
        let login = try stack.login("other-password")
        #expect(login.status == 0, "\(login.errorOutput)")
        #expect(try loginKeyring(fixture) == .locked)
        #expect(daemon.log.contains("the login password does not open the login keyring"), "\(daemon.log)")
        #expect(try opens(fixture, "keyring-password"))
        daemon.stop()
    }

    @Test("no password, or an empty one (a key, autologin), sends nothing", arguments: [nil, ""] as [String?])
    func noPassword(token: String?) throws {
        let (fixture, daemon, stack) = try start(checksPassword: false)
        let login = try stack.login(token, reachableInAuth: true)
        #expect(login.status == 0, "\(login.errorOutput)")
        #expect(try loginKeyring(fixture) == .absent)
        daemon.stop()
    }

    @Test("the module never turns a failed authentication into a success (it answers PAM_IGNORE)")
    func neverGrants() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        // pam_matrix's failure is ignored here, so the last module's answer decides: an optional
        // module answering PAM_SUCCESS (pam_permit) lets the wrong password in.
        for (module, expected) in [(PAMStack.module, Int32(1)), ("pam_permit.so", 0)] {
            let stack = try PAMStack(
                directory: root, runtime: root, template: """
                    auth [success=done default=ignore] MATRIX
                    auth [default=ignore] SET_ITEMS
                    auth optional \(module)
                    """)
            let login = try stack.login("wrong-password", accepted: "right-password", operations: ["authenticate"])
            #expect(login.status == expected, "\(module): \(login.errorOutput)")
        }
    }

    // MARK: - Changing the password

    @Test("a password change with the old password re-wraps the keyring: the new password opens it, the old does not")
    func change() throws {
        let (fixture, daemon, stack) = try start(password: "old-password")
        let change = try stack.changePassword(old: "old-password", new: "new-password")
        #expect(change.status == 0, "\(change.errorOutput)")
        try lock(fixture)
        #expect(try stack.login("new-password").status == 0)
        #expect(try loginKeyring(fixture) == .unlocked)
        try lock(fixture)
        #expect(try !opens(fixture, "old-password"))
        #expect(try opens(fixture, "new-password"))
        daemon.stop()
    }

    @Test("a password change with a wrong old password changes nothing and still succeeds")
    func changeWithWrongOld() throws {
        let (fixture, daemon, stack) = try start(password: "old-password")
        let change = try stack.changePassword(old: "not-the-old-password", new: "new-password")
        #expect(change.status == 0, "\(change.errorOutput)")
        try lock(fixture)
        #expect(try !opens(fixture, "new-password"))
        #expect(try opens(fixture, "old-password"))
        daemon.stop()
    }

    @Test("root setting the password (no old one) re-wraps an unlocked keyring and leaves a locked one", arguments: [false, true])
    func changeWithoutOld(locked: Bool) throws {
        let (fixture, daemon, stack) = try start(password: "old-password")
        if locked { try lock(fixture) }
        let change = try stack.changePassword(old: nil, new: "new-password")
        #expect(change.status == 0, "\(change.errorOutput)")
        try lock(fixture)
        #expect(try opens(fixture, locked ? "old-password" : "new-password"))
        daemon.stop()
    }

    // MARK: - Where it sends, and where it does not

    @Test("without a running secretd (no socket, or a stale one) every phase succeeds at once",
          arguments: ["no directory", "stale socket"])
    func daemonAbsent(_ state: String) throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let runtime = root.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if state == "stale socket" {
            let directory = runtime.appendingPathComponent("secretd")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            try bindAndClose(directory.appendingPathComponent("control").path)
        }
        let stack = try PAMStack(directory: root, runtime: runtime)
        let started = Date()
        let login = try stack.login("login-password", operations: ["authenticate", "open_session", "close_session"], reachableInAuth: true)
        let change = try stack.changePassword(old: "login-password", new: "new-password")
        #expect(login.status == 0, "\(login.errorOutput)")
        #expect(change.status == 0, "\(change.errorOutput)")
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test("nothing is sent when the socket's directory or the socket belongs to another user",
          .enabled(if: getuid() == 0, "needs root to give files away"), arguments: ["directory", "socket"])
    func foreignOwner(_ what: String) throws {
        let (fixture, daemon, stack) = try start()
        let path = what == "directory" ? controlDirectory(fixture) : controlSocket(fixture)
        #expect(chown(path, Self.nobody, Self.nobody) == 0)
        #expect(try stack.login("login-password", reachableInAuth: true).status == 0)
        #expect(try loginKeyring(fixture) == .absent)
        // The same login with the owner restored creates the keyring: the owner was the reason.
        #expect(chown(path, getuid(), getgid()) == 0)
        #expect(try stack.login("login-password", reachableInAuth: true).status == 0)
        #expect(try loginKeyring(fixture) == .unlocked)
        daemon.stop()
    }

    @Test("nothing is sent when the socket or its directory is a symbolic link to the real one",
          arguments: ["socket", "directory"])
    func symbolicLink(_ what: String) throws {
        let (fixture, daemon, stack) = try start()
        let link = what == "socket" ? controlSocket(fixture) : controlDirectory(fixture)
        let real = link + "-real"
        #expect(rename(link, real) == 0)
        #expect(symlink(real, link) == 0)
        #expect(try stack.login("login-password", reachableInAuth: true).status == 0)
        #expect(try loginKeyring(fixture) == .absent)
        #expect(unlink(link) == 0 && rename(real, link) == 0)
        #expect(try stack.login("login-password", reachableInAuth: true).status == 0)
        #expect(try loginKeyring(fixture) == .unlocked)
        daemon.stop()
    }

    @Test("nothing is sent when others may enter the socket's directory (mode 0755)")
    func openDirectory() throws {
        let (fixture, daemon, stack) = try start()
        #expect(chmod(controlDirectory(fixture), 0o755) == 0)
        #expect(try stack.login("login-password", reachableInAuth: true).status == 0)
        #expect(try loginKeyring(fixture) == .absent)
        #expect(chmod(controlDirectory(fixture), 0o700) == 0)
        #expect(try stack.login("login-password", reachableInAuth: true).status == 0)
        #expect(try loginKeyring(fixture) == .unlocked)
        daemon.stop()
    }

    @Test("only_if= and ignore= choose the PAM services it acts for",
          arguments: [("only_if=login,gdm-password", false), ("ignore=sudo,secretd-test", false),
                      ("only_if=login,secretd-test", true), ("ignore=sudo debug unknown=1", true)])
    func serviceOptions(options: String, acts: Bool) throws {
        let (fixture, daemon, _) = try start()
        let stack = try PAMStack(fixture: fixture, options: options)
        #expect(try stack.login("login-password").status == 0)
        #expect(try loginKeyring(fixture) == (acts ? .unlocked : .absent))
        daemon.stop()
    }

    // MARK: - Running as root for another user

    @Test("run as root for another user, the module unlocks and re-wraps that user's keyring through its forked helper",
          .enabled(if: getuid() == 0, "needs root to run secretd as another user"))
    func forkedHelper() throws {
        let (fixture, daemon) = try startAsNobody()
        defer { daemon.stop() }
        let stack = try PAMStack(fixture: fixture, user: "nobody")
        #expect(try stack.login("first-password").status == 0)
        #expect(try lockedAsNobody(fixture) == "b false")
        #expect(try stack.changePassword(old: "first-password", new: "second-password").status == 0)
        #expect(daemon.log.contains("the login keyring now opens with the new login password"), "\(daemon.log)")
    }

    @Test("the socket as the user's own processes see it: they cannot set the login password without the old one; root's passwd (the module's helper) can, and a locked keyring takes it at its next unlock",
          .enabled(if: getuid() == 0, "needs root to run secretd as another user"))
    func passwordWithoutOldOneIsRoots() throws {
        let (fixture, daemon) = try startAsNobody()
        defer { daemon.stop() }
        let stack = try PAMStack(fixture: fixture, user: "nobody")
        // A process of nobody's cannot create the login keyring over the socket; a login does.
        let socket = controlSocket(fixture)
        let client = Self.asNobody + ["/usr/bin/python3", "-c", LoginControlTests.client, socket]
        #expect(try fixture.run(client + [LoginControlTests.unlock("chosen")]).text == "2\n")
        let absent = try lockedAsNobody(fixture)
        #expect(absent.contains("no collection"), "\(absent)")
        #expect(try stack.login("first-password").status == 0)
        #expect(try lockedAsNobody(fixture) == "b false")
        // Nobody's own process: refused, whether the keyring is unlocked or not.
        #expect(try fixture.run(client + [LoginControlTests.change("", "attacker")]).text == "2\n")
        #expect(daemon.log.contains("refused a login password change without the old password from a process of the user"))
        let secretctl = Self.asNobody + [SecretdFixture.secretctlPath]
        #expect(try fixture.run(secretctl + ["lock"]).status == 0)
        #expect(try fixture.run(client + [LoginControlTests.change("", "attacker")]).text == "2\n")
        #expect(try fixture.run(secretctl + ["unlock", "--password-stdin"], input: "attacker").status != 0)
        // Root's passwd for nobody while the keyring is locked: it takes the new password when
        // it is next unlocked, with the one it has.
        #expect(try stack.changePassword(old: nil, new: "root-set").status == 0)
        #expect(try lockedAsNobody(fixture) == "b true")
        usleep(1_100_000)  // the attacker's wrong password above made the next try wait 1 s
        let opened = try fixture.run(secretctl + ["unlock", "--password-stdin"], input: "first-password")
        #expect(opened.status == 0, "\(opened.errorOutput)")
        #expect(daemon.logs("the login keyring now opens with the login password root set"), "\(daemon.log)")
        #expect(try fixture.run(secretctl + ["lock"]).status == 0)
        #expect(try fixture.run(secretctl + ["unlock", "--password-stdin"], input: "root-set").status == 0)
    }

    @Test("the forked helper talks as the user: the user's gids and effective uid, no groups, not traceable; run by root, it sends as real uid 0, then drops root for good",
          .enabled(if: getuid() == 0, "needs root to run a listener as another user"))
    func helperCredentials() throws {
        let listener = try Listener(user: Self.nobody)
        var stack = try PAMStack(directory: listener.root, runtime: listener.runtime, user: "nobody")
        stack.launcher = ["setpriv", "--groups=4,27,100"]  // supplementary groups for the helper to drop
        #expect(try stack.login("login-password", operations: ["authenticate"], reachableInAuth: true).status == 0)
        #expect(try listener.connections(1) == [
            Listener.Connection(
                bytes: 26, operation: 1, arguments: ["login-password"], uid: "65534 65534 65534 65534",
                gid: "65534 65534 65534 65534", groups: "", memOwner: 0, senders: [0]),
        ])
    }

    @Test("nothing is sent to a listener of another user, even at a path that passes every check",
          .enabled(if: getuid() == 0, "needs root to run a listener as another user"))
    func foreignPeer() throws {
        let listener = try Listener(user: Self.nobody)
        // Root's now: the directory and the socket pass the module's checks for root.
        #expect(chown(listener.directory.path, 0, 0) == 0 && chown(listener.socket, 0, 0) == 0)
        let stack = try PAMStack(directory: listener.root, runtime: listener.runtime, user: "root")
        #expect(try stack.login("login-password", operations: ["authenticate"], reachableInAuth: true).status == 0)
        #expect(try listener.connections(1) == [Listener.Connection(bytes: 0)])
    }

    @Test("a secretd that never answers holds the login up for SECRETD_CONTROL_TIMEOUT_SECONDS (20 s) at most")
    func silentDaemon() throws {
        let listener = try Listener(answers: false)
        let stack = try PAMStack(directory: listener.root, runtime: listener.runtime)
        let started = Date()
        #expect(try stack.login("login-password", operations: ["authenticate"], reachableInAuth: true).status == 0)
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed >= 19 && elapsed < 40, "\(elapsed) s")
        #expect(try listener.connections(1).map(\.bytes) == [26])
    }

    // MARK: - The frames

    @Test("the frames: UNLOCK(password) from auth; none for an absent, empty or too long password; the longest one goes")
    func unlockFrames() throws {
        let listener = try Listener()
        let stack = try PAMStack(directory: listener.root, runtime: listener.runtime, checksPassword: false)
        let longest = String(repeating: "p", count: 65536)
        // The last one is sent, so an earlier one that should not have been would show first.
        for password in [nil, "", longest + "p", longest, "\u{e9}t\u{e9}"] {
            #expect(try stack.login(password, operations: ["authenticate"], reachableInAuth: true).status == 0)
        }
        let connections = try listener.connections(2)
        #expect(connections.map(\.bytes) == [8 + 4 + 65536, 8 + 4 + 5])
        #expect(connections.map(\.operation) == [1, 1])
        #expect(connections.map(\.arguments) == [[longest], ["\u{e9}t\u{e9}"]])
    }

    @Test("the frames: one CHANGE(old, new) per password change, in the update phase; CHANGE('', new) without an old password")
    func changeFrames() throws {
        let listener = try Listener()
        let stack = try PAMStack(directory: listener.root, runtime: listener.runtime)
        #expect(try stack.changePassword(old: "old-password", new: "new-password").status == 0)
        #expect(try stack.changePassword(old: nil, new: "newer-password").status == 0)
        #expect(try stack.changePassword(old: "old-password", new: "").status == 0)  // no new password: nothing
        #expect(try stack.changePassword(old: "a", new: "b").status == 0)  // the last, so nothing is missed
        let connections = try listener.connections(3)
        #expect(connections.map(\.operation) == [2, 2, 2])
        #expect(connections.map(\.arguments) == [["old-password", "new-password"], ["", "newer-password"], ["a", "b"]])
        #expect(connections.map(\.bytes) == [8 + 4 + 12 + 4 + 12, 8 + 4 + 0 + 4 + 14, 8 + 4 + 1 + 4 + 1])
    }

    // MARK: - The library itself

    @Test("the module exports only pam_sm_* and needs only libpam and libc")
    func linkage() throws {
        let module = try #require(PAMStack.builtModule)
        let symbols = try CommandResult.run(["nm", "-D", "--defined-only", module], environment: Self.tools, scratch: FileManager.default.temporaryDirectory)
        let names = symbols.text.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        #expect(names.sorted() == ["pam_sm_authenticate", "pam_sm_chauthtok", "pam_sm_close_session", "pam_sm_open_session", "pam_sm_setcred"])
        let dynamic = try CommandResult.run(["readelf", "-d", module], environment: Self.tools, scratch: FileManager.default.temporaryDirectory)
        let needed = dynamic.text.split(separator: "\n").filter { $0.contains("(NEEDED)") }
            .compactMap { $0.split(separator: "[").last?.split(separator: "]").first.map(String.init) }
        #expect(needed.sorted() == ["libc.so.6", "libpam.so.0"], "\(dynamic.text)")
        #expect(dynamic.text.contains("(FLAGS)") && dynamic.text.contains("BIND_NOW"), "not linked with -z now")
        #expect(dynamic.text.contains("NODELETE"), "not linked with -z nodelete")
        let loaded = try CommandResult.run(["ldd", module], environment: Self.tools, scratch: FileManager.default.temporaryDirectory)
        #expect(loaded.status == 0)
        for unwanted in ["swift", "Foundation", "stdc++", "glib", "gio", "gcrypt", "sqlite"] {
            #expect(!loaded.text.contains(unwanted), "\(loaded.text)")
        }
    }

    @Test("pam_secretd(8) states the timeout and the password limit of login-control.h")
    func manualLimits() throws {
        let root = PAMStack.packageRoot
        let header = try String(contentsOf: root.appendingPathComponent("Sources/CLoginControl/login-control.h"), encoding: .utf8)
        let manual = try String(contentsOf: root.appendingPathComponent("man/pam_secretd.8"), encoding: .utf8)
        func value(_ name: String) -> String? {
            header.split(separator: "\n").first { $0.hasPrefix("#define \(name) ") }?.split(separator: " ").last.map(String.init)
        }
        let timeout = try #require(value("SECRETD_CONTROL_TIMEOUT_SECONDS"))
        let limit = try #require(value("SECRETD_CONTROL_MAX_PASSWORD"))
        #expect(manual.contains("within \(timeout) seconds"))
        #expect(manual.contains("longer than \(limit) bytes"))
    }

    // MARK: - Helpers

    static let nobody: uid_t = 65534
    static let asNobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    static let tools = ["PATH": "/usr/bin:/bin", "LANG": "C"]

    /// A fixture with secretd running on it (with a login keyring of `password`, unlocked, or
    /// none) and a stack of pam_secretd.so pointed at it.
    func start(password: String? = nil, checksPassword: Bool = true) throws -> (SecretdFixture, SupervisedProcess, PAMStack) {
        let fixture = try SecretdFixture()
        let daemon = try password.map { try fixture.start(["--unlock"], input: $0) } ?? fixture.start([], input: nil)
        return (fixture, daemon, try PAMStack(fixture: fixture, checksPassword: checksPassword))
    }

    /// A fixture whose secretd runs as nobody, with its data, configuration and runtime
    /// directories nobody's, once it owns the bus name.
    func startAsNobody() throws -> (SecretdFixture, SupervisedProcess) {
        let fixture = try SecretdFixture(otherUsers: true)
        let runtime = fixture.root.appendingPathComponent("run")
        for directory in [fixture.dataDirectory, fixture.configDirectory, runtime] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            #expect(chown(directory.path, Self.nobody, Self.nobody) == 0)
        }
        let daemon = try SupervisedProcess(
            Self.asNobody + [SecretdFixture.secretdPath, "--foreground", "--data-dir", fixture.dataDirectory.path,
                             "--config-dir", fixture.configDirectory.path],
            environment: fixture.environment, logURL: fixture.root.appendingPathComponent("secretd-nobody.log"))
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon)
        return (fixture, daemon)
    }

    enum LoginKeyring: Equatable { case absent, locked, unlocked }

    /// Whether the login keyring exists and is locked, asked over D-Bus.
    func loginKeyring(_ fixture: SecretdFixture) throws -> LoginKeyring {
        let collections = try fixture.call(Self.service, Self.properties, "Get", "('\(Self.serviceInterface)', 'Collections')")
        guard objectPaths(in: collections).contains(Self.login) else { return .absent }
        let locked = try fixture.call(Self.login, Self.properties, "Get", "('\(Self.collectionInterface)', 'Locked')")
        return locked == "(<true>,)" ? .locked : .unlocked
    }

    func lock(_ fixture: SecretdFixture) throws {
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(Self.login)'],)")
        #expect(try loginKeyring(fixture) == .locked)
    }

    /// Whether `password` unlocks the locked login keyring (UnlockWithMasterPassword), after
    /// waiting out secretd's delay after an earlier wrong password.
    func opens(_ fixture: SecretdFixture, _ password: String) throws -> Bool {
        let session = try openPlainSession(fixture)
        let deadline = Date().addingTimeInterval(70)
        while true {
            do {
                _ = try fixture.call(Self.service, Self.gnome, "UnlockWithMasterPassword", "(objectpath '\(Self.login)', \(secret(session, password)))")
                return try loginKeyring(fixture) == .unlocked
            } catch where "\(error)".contains("try again in") && Date() < deadline {
                usleep(250_000)
            } catch where "\(error)".contains("org.gnome.keyring.Error.Denied") {
                return false
            }
        }
    }

    func controlDirectory(_ fixture: SecretdFixture) -> String { fixture.root.appendingPathComponent("run/secretd").path }
    func controlSocket(_ fixture: SecretdFixture) -> String { controlDirectory(fixture) + "/control" }

    /// The login keyring's Locked property as nobody's busctl prints it.
    func lockedAsNobody(_ fixture: SecretdFixture) throws -> String {
        let result = try fixture.run(
            Self.asNobody + ["busctl", "--address=\(fixture.bus.address)", "get-property", TestEnvironment.busName, Self.login,
                             Self.collectionInterface, "Locked"])
        return result.text.trimmingCharacters(in: .whitespacesAndNewlines) + result.errorOutput
    }

    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pam-tests-\(UUID().uuidString.prefix(12))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }

    /// Leaves a Unix socket at `path` that nobody listens on (as a secretd that crashed would).
    func bindAndClose(_ path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
    }
}

extension PAMModuleTests {
    /// A PAM service for pam_wrapper around pam_secretd.so, and pamtester runs of it.
    ///
    /// pam_matrix checks the typed password against a passdb file (pam_matrix(8)); because it wipes
    /// the PAM_AUTHTOK it read, pam_set_items then sets PAM_AUTHTOK (and PAM_OLDAUTHTOK) from the
    /// environment, as pam_unix leaves them for the modules after it. pam_env stands in for
    /// pam_systemd: it puts the session's XDG_RUNTIME_DIR into the PAM environment before the
    /// module's session line. In auth, XDG_RUNTIME_DIR (pamtester -E) is the session's when secretd
    /// is to be reachable already, else an empty directory (a first login, before pam_systemd).
    struct PAMStack {
        /// The package root (this file is Tests/SecretServiceTests/PAMModuleTests.swift).
        static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        /// Where `make pam` puts the module, or `$PAM_SECRETD_MODULE` (an installed one, a variant).
        static let module = ProcessInfo.processInfo.environment["PAM_SECRETD_MODULE"]
            ?? packageRoot.appendingPathComponent(".build/pam/pam_secretd.so").path
        static var builtModule: String? { FileManager.default.fileExists(atPath: module) ? module : nil }

        /// The default stack: what pam-auth-update's common-* files amount to, around the module.
        static let standard = """
            auth      requisite  MATRIX
            auth      optional   SET_ITEMS
            auth      optional   MODULE
            session   optional   pam_env.so conffile=ENVCONF readenv=0
            session   optional   MODULE
            password  optional   SET_ITEMS
            password  optional   MODULE
            """

        let directory: URL
        let runtime: URL
        let user: String
        let name: String
        /// What pamtester runs under (empty: nothing).
        var launcher: [String] = []
        private let passdb: URL
        private let notYet: URL

        /// A service `name` in `directory` for `user` (the user running the tests by default),
        /// whose session's XDG_RUNTIME_DIR is `runtime`; `template` is the service file with MATRIX,
        /// SET_ITEMS, MODULE (followed by `options`) and ENVCONF for the paths.
        init(directory: URL, runtime: URL, user: String? = nil, name: String = "secretd-test", options: String = "",
             checksPassword: Bool = true, template: String = PAMStack.standard) throws {
            let module = try #require(Self.builtModule, "\(Self.module) is missing: run make pam")
            let wrapper = try #require(PAMTools.wrapperModules)
            self.directory = directory.appendingPathComponent("pam-\(name)")
            self.runtime = runtime
            if let user {
                self.user = user
            } else {
                self.user = try #require(getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) })
            }
            self.name = name
            passdb = self.directory.appendingPathComponent("passdb")
            notYet = self.directory.appendingPathComponent("not-yet")
            for path in [self.directory.appendingPathComponent("services"), notYet] {
                try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            let environmentFile = self.directory.appendingPathComponent("env.conf")
            try "XDG_RUNTIME_DIR OVERRIDE=\(runtime.path)\n".write(to: environmentFile, atomically: true, encoding: .utf8)
            var service = template
                .replacingOccurrences(of: "MATRIX", with: "\(wrapper)/pam_matrix.so passdb=\(passdb.path)")
                .replacingOccurrences(of: "SET_ITEMS", with: "\(wrapper)/pam_set_items.so")
                .replacingOccurrences(of: "MODULE", with: "\(module) \(options)")
                .replacingOccurrences(of: "ENVCONF", with: environmentFile.path)
            if !checksPassword { service = service.split(separator: "\n").filter { !$0.contains("pam_matrix") }.joined(separator: "\n") }
            try (service + "\n").write(to: self.directory.appendingPathComponent("services/\(name)"), atomically: true, encoding: .utf8)
        }

        /// The stack for `fixture`'s secretd.
        init(fixture: SecretdFixture, user: String? = nil, name: String = "secretd-test", options: String = "",
             checksPassword: Bool = true, template: String = PAMStack.standard) throws {
            try self.init(directory: fixture.root, runtime: fixture.root.appendingPathComponent("run"), user: user, name: name,
                          options: options, checksPassword: checksPassword, template: template)
        }

        /// Logs in with `password` typed (and left in PAM_AUTHTOK; nil leaves it unset), the passdb
        /// accepting `accepted` (the same by default): pamtester's `operations` in one PAM handle.
        func login(_ password: String?, accepted: String? = nil, operations: [String] = ["authenticate", "open_session"],
                   reachableInAuth: Bool = false) throws -> CommandResult {
            try "\(user):\(accepted ?? password ?? "x"):\(name)\n".write(to: passdb, atomically: true, encoding: .utf8)
            return try run(operations, runtime: reachableInAuth ? runtime : notYet, input: (password ?? "") + "\n",
                           tokens: ["PAM_AUTHTOK": password, "PAM_OLDAUTHTOK": nil])
        }

        /// Changes the password from `old` (nil: root setting it) to `new` (pamtester chauthtok).
        func changePassword(old: String?, new: String) throws -> CommandResult {
            try run(["chauthtok"], runtime: runtime, input: "", tokens: ["PAM_AUTHTOK": new, "PAM_OLDAUTHTOK": old])
        }

        private func run(_ operations: [String], runtime: URL, input: String, tokens: [String: String?]) throws -> CommandResult {
            var environment = [
                "PATH": "/usr/bin:/bin", "LD_PRELOAD": "libpam_wrapper.so", "PAM_WRAPPER": "1",
                "PAM_WRAPPER_SERVICE_DIR": directory.appendingPathComponent("services").path,
            ]
            for case let (key, value?) in tokens { environment[key] = value }
            return try CommandResult.run(
                launcher + ["pamtester", "-E", "XDG_RUNTIME_DIR=\(runtime.path)", name, user] + operations, input: Data(input.utf8),
                environment: environment, scratch: directory)
        }
    }

    /// A stand-in for secretd at `<root>/run/secretd/control` (both directories 0700), run as
    /// `user` (the test's own by default): it reads one request per connection (its length from
    /// the first four bytes), answers OK to a complete one (unless told not to answer at all), and
    /// prints a JSON line per connection with what came and, when something did, the credentials
    /// of the process that sent it.
    final class Listener {
        /// One connection as the listener saw it.
        struct Connection: Decodable, Equatable {
            var bytes: Int
            var operation: Int? = nil
            var arguments: [String]? = nil
            /// The sender's /proc/PID/status lines (real, effective, saved, filesystem ids).
            var uid: String? = nil
            var gid: String? = nil
            var groups: String? = nil
            /// The owner of the sender's /proc/PID/mem: root when the sender is not dumpable.
            var memOwner: UInt32? = nil
            /// The real uids the kernel named as senders of the request's bytes (SO_PASSCRED).
            var senders: [UInt32]? = nil
        }

        let root: URL
        let runtime: URL
        let directory: URL
        let socket: String
        private let process: SupervisedProcess

        static let script = #"""
            import json, os, socket, struct, sys
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            server.bind(sys.argv[1])
            server.listen(8)
            print("listening", flush=True)
            answers, kept = sys.argv[2] == "answer", []
            while True:
                connection, _ = server.accept()
                kept.append(connection)
                pid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
                data, senders = b"", set()
                while len(data) < 4 or len(data) < struct.unpack(">I", data[:4])[0]:
                    chunk, ancillary, _, _ = connection.recvmsg(65536, socket.CMSG_SPACE(12))
                    for level, kind, payload in ancillary:
                        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                            senders.add(struct.unpack("3i", payload)[1])
                    if not chunk:
                        break
                    data += chunk
                seen = {"bytes": len(data)}
                if len(data) >= 8 and len(data) == struct.unpack(">I", data[:4])[0]:
                    seen["operation"], offset, seen["arguments"] = struct.unpack(">I", data[4:8])[0], 8, []
                    while offset + 4 <= len(data):
                        size = struct.unpack(">I", data[offset:offset + 4])[0]
                        seen["arguments"].append(data[offset + 4:offset + 4 + size].decode())
                        offset += 4 + size
                    seen["senders"] = sorted(senders)
                    # The sender says it has sent everything (after dropping root, if it kept it): look at it then.
                    connection.settimeout(5)
                    try:
                        connection.recv(1)
                    except socket.timeout:
                        pass
                    connection.settimeout(None)
                    status = dict(line.split(":", 1) for line in open("/proc/%d/status" % pid).read().splitlines())
                    for key in ("Uid", "Gid", "Groups"):
                        seen[key.lower()] = " ".join(status[key].split())
                    seen["memOwner"] = os.stat("/proc/%d/mem" % pid).st_uid
                    if answers:
                        connection.sendall(struct.pack(">II", 8, 0))
                print(json.dumps(seen), flush=True)
                if answers:
                    connection.close()
            """#

        init(user: uid_t? = nil, answers: Bool = true) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("pam-tests-\(UUID().uuidString.prefix(12))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o711])
            runtime = root.appendingPathComponent("run")
            directory = runtime.appendingPathComponent("secretd")
            socket = directory.appendingPathComponent("control").path
            for path in [runtime, directory] {
                try FileManager.default.createDirectory(at: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                if let user, chown(path.path, user, user) != 0 { throw HarnessError("cannot chown \(path.path)") }
            }
            let script = root.appendingPathComponent("listener.py")
            try Self.script.write(to: script, atomically: true, encoding: .utf8)
            // Modes set outright, not left to the umask, which is the whole test process's (Store
            // once set it to 077 while it opened a database in another suite, and the script was
            // unreadable for the listener's user now and then).
            guard chmod(root.path, 0o711) == 0, chmod(script.path, 0o644) == 0 else {
                throw HarnessError("cannot open \(root.path) to the listener's user")
            }
            let run = user.map { ["setpriv", "--reuid=\($0)", "--regid=\($0)", "--clear-groups"] } ?? []
            process = try SupervisedProcess(
                run + ["/usr/bin/python3", script.path, socket, answers ? "answer" : "never"], environment: ["PATH": "/usr/bin:/bin"],
                logURL: root.appendingPathComponent("listener.log"), removeWhenOrphaned: root)
            // A wait for the listener to say it listens, bounded generously: under make test's load
            // a Python start took over 10 s.
            let deadline = Date().addingTimeInterval(90)
            while !process.log.hasPrefix("listening\n") {
                guard process.isRunning else {
                    let status = process.waitForExit(timeout: 1).map(String.init) ?? "?"
                    throw HarnessError("the listener exited (status \(status)) before listening: \(process.log)")
                }
                guard Date() < deadline else { throw HarnessError("the listener did not listen within 90 s: \(process.log)") }
                usleep(20_000)
            }
        }

        deinit {
            process.stop()
            try? FileManager.default.removeItem(at: root)
        }

        /// The connections it has seen, once it has seen `count` (or after 10 s).
        func connections(_ count: Int) throws -> [Connection] {
            let deadline = Date().addingTimeInterval(10)
            var lines: [Substring] { Array(process.log.split(separator: "\n").dropFirst()) }
            while lines.count < count && Date() < deadline { usleep(20_000) }
            return try lines.map { try JSONDecoder().decode(Connection.self, from: Data($0.utf8)) }
        }
    }
}

/// pamtester and libpam-wrapper's test modules (/usr/lib/<triplet>/pam_wrapper), if installed.
private enum PAMTools {
    static let wrapperModules: String? = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? [])
        .map { "/usr/lib/\($0)/pam_wrapper" }.first { FileManager.default.fileExists(atPath: "\($0)/pam_matrix.so") }
    static var present: Bool { wrapperModules != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/pamtester") }
}

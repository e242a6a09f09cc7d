import Foundation
import KeychainTestSupport
import Testing

@testable import SecretCrypto
@testable import SecretStore

/// secretd's hardening, checked from outside: no secret in any argv, environment, log or
/// error output; private file modes whatever the umask; Argon2id at or above the documented
/// minimum; a process that cannot be traced or dumped.
@Suite struct HardeningTests {
    static let login = "/org/freedesktop/secrets/collection/login"

    /// The documented minimum (secretd(1) SECURITY): 3 passes, 64 MiB, 4 lanes.
    static let minimumKDF = KDFParameters(iterations: 3, memoryKiB: 64 * 1024, lanes: 4)

    /// Every secret the tour below hands to a client, a prompt or secretd.
    struct Secrets {
        static let loginPassword = "LOGINPW-4c1d93"
        static let newLoginPassword = "NEWLOGINPW-6b8e21"
        static let wrongPassword = "WRONGPW-5a7f02"
        static let secretTool = "SECRET-st-7a1c55"
        static let secretctl = "SECRET-ctl-8b2d66"
        static let python = "SECRET-py-9c3e77"
        static let git = "SECRET-git-1d4f88"
        static let login = "SECRET-login-2e5a99"
        static let passphrase = "PASSPHRASE-3f6b00"
        static let all = [loginPassword, newLoginPassword, wrongPassword, secretTool, secretctl, python, git, login, passphrase]
    }

    @Test("a tour of every feature leaves no secret in argv, environment, log or stderr; files stay private under umask 000; Argon2id at the minimum or above")
    func tour() throws {
        let fixture = try SecretdFixture()
        let bin = URL(fileURLWithPath: SecretdFixture.secretdPath).deletingLastPathComponent()
        let secretctl = bin.appendingPathComponent("secretctl").path
        let records = fixture.root.appendingPathComponent("spawned.log")

        // A pinentry that records how it was started, then answers as the scripted one does.
        let scripted = try ScriptedPinentry(in: fixture.root, answers: [Secrets.loginPassword])
        let pinentry = fixture.root.appendingPathComponent("recording-pinentry")
        try ExecutableFile.write(script: """
            #!/bin/sh
            { echo "pinentry argv: $0 $*"; env | sed 's/^/pinentry env: /'; } >>'\(records.path)'
            exec '\(scripted.program.path)' "$@"
            """, to: pinentry)
        try fixture.writeConfiguration("pinentry = \(pinentry.path)\n")
        fixture.environment.merge(scripted.environment) { $1 }

        // The sampler must see a process that does put a secret on its command line.
        let canary = "CANARY-\(UUID().uuidString.prefix(8))"
        let sampler = ProcessSampler(looking: Secrets.all + [canary])
        sampler.start()
        defer { sampler.stop() }
        // It lives until the sampler has seen it or 30 s went by: on a loaded machine one round
        // over every process can take longer than a short-lived canary lives.
        // (Not Foundation's Process: its children start with most signals blocked, so they
        // would not end on SIGTERM.)
        let canaryProcess = try SupervisedProcess(
            ["/bin/sh", "-c", "trap 'kill $!; exit 0' TERM; sleep 60 & wait", canary], environment: fixture.environment,
            logURL: fixture.root.appendingPathComponent("canary.log"))
        let canaryDeadline = Date().addingTimeInterval(30)
        while !sampler.findings.contains(where: { $0.hasSuffix("cmdline: \(canary)") }) && Date() < canaryDeadline {
            usleep(10_000)
        }
        canaryProcess.stop()

        // secretd under umask 000: it must not rely on the umask for its modes.
        let daemon = try SupervisedProcess(
            ["/bin/sh", "-c", "umask 000; exec \"$0\" \"$@\"", SecretdFixture.secretdPath, "--foreground", "--unlock",
             "--data-dir", fixture.dataDirectory.path, "--config-dir", fixture.configDirectory.path],
            environment: fixture.environment, standardInput: Data(Secrets.loginPassword.utf8),
            logURL: fixture.root.appendingPathComponent("secretd.log"))
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon)

        var errorOutput = ""
        @discardableResult
        func run(_ arguments: [String], input: String? = nil, status expected: Int32 = 0) throws -> CommandResult {
            let result = try fixture.run(arguments, input: input)
            errorOutput += result.errorOutput
            #expect(result.status == expected, "\(arguments.prefix(3)): \(result.errorOutput)")
            return result
        }

        try run(["secret-tool", "store", "--label=Tour", "service", "st", "account", "a"], input: Secrets.secretTool)
        #expect(try run(["secret-tool", "lookup", "service", "st", "account", "a"]).text == Secrets.secretTool)
        try run([secretctl, "set", "ctl", "a"], input: Secrets.secretctl)
        #expect(try run([secretctl, "get", "ctl", "a"]).text == Secrets.secretctl)
        try run(["/usr/bin/python3", "-c", "import keyring, sys; keyring.set_password('py', 'a', sys.stdin.read())"],
                input: Secrets.python)
        #expect(try run(["/usr/bin/python3", "-c", "import keyring; print(keyring.get_password('py', 'a'), end='')"]).text
                == Secrets.python)
        let credential = "protocol=https\nhost=git.example.com\nusername=bob\n"
        try run([secretctl, "git-credential", "store"], input: credential + "password=\(Secrets.git)\n\n")
        #expect(try run([secretctl, "git-credential", "get"], input: credential + "\n").text.contains("password=\(Secrets.git)"))

        // secretctl login: the password reaches COMMAND on its standard input only.
        try Secrets.login.write(to: fixture.root.appendingPathComponent("login-answer"), atomically: true, encoding: .utf8)
        let command = """
            echo "command argv: $0 $*" >>'\(records.path)'; env | sed 's/^/command env: /' >>'\(records.path)'
            IFS= read -r password; [ "$password" = "$(cat '\(fixture.root.path)/login-answer')" ]
            """
        try scripted.setAnswers([Secrets.login])
        var loginEnvironment = fixture.environment
        loginEnvironment["PINENTRY"] = pinentry.path
        let loggedIn = try CommandResult.run(
            ["/usr/bin/setsid", "-w", secretctl, "login", "--account", "bob", "--remember", "tour.example", "--",
             "/bin/sh", "-c", command], environment: loginEnvironment, scratch: fixture.root)
        errorOutput += loggedIn.errorOutput
        #expect(loggedIn.status == 0, "\(loggedIn.errorOutput)")
        #expect(try run([secretctl, "get", "tour.example", "bob"]).text == Secrets.login)

        let export = fixture.root.appendingPathComponent("tour.export").path
        try run([secretctl, "export", export], input: Secrets.passphrase + "\n")
        try run([secretctl, "import", "--replace", export], input: Secrets.passphrase + "\n")

        // A wrong password, then the right one through secretd's own pinentry prompt.
        try run([secretctl, "lock"])
        try run([secretctl, "unlock", "--password-stdin"], input: Secrets.wrongPassword + "\n", status: 4)
        try fixture.passwordClock.advance(by: 1.01)  // the wait after one wrong password is 1 s
        try scripted.setAnswers([Secrets.loginPassword])
        try run([secretctl, "unlock"])
        #expect(scripted.count("GETPIN") >= 1, "secretd's prompt never ran pinentry")

        try run([secretctl, "groups", "--password-stdin", "add-member", "com.example.tour", "exe:/usr/bin/true"],
                input: Secrets.loginPassword + "\n")
        try run([secretctl, "passwd", "--password-stdin"], input: "\(Secrets.loginPassword)\n\(Secrets.newLoginPassword)\n")
        try run([secretctl, "lock"])
        try run([secretctl, "unlock", "--password-stdin"], input: Secrets.newLoginPassword + "\n")
        #expect(try run([secretctl, "get", "ctl", "a"]).text == Secrets.secretctl)
        daemon.stop()
        sampler.stop()

        // No secret outside the channels meant for it.
        let spawned = (try? String(contentsOf: records, encoding: .utf8)) ?? ""
        #expect(spawned.contains("pinentry argv:") && spawned.contains("command argv:"), "\(spawned.prefix(500))")
        for secret in Secrets.all {
            #expect(!daemon.log.contains(secret), "secretd's log holds \(secret)")
            #expect(!errorOutput.contains(secret), "a client's error output holds \(secret)")
            #expect(!spawned.contains(secret), "the argv or environment of a spawned process holds \(secret)")
        }
        let findings = sampler.findings
        #expect(findings.contains { $0.hasSuffix("cmdline: \(canary)") }, "the sampler missed the canary: \(findings)")
        #expect(findings.allSatisfy { $0.hasSuffix(canary) }, "\(findings)")
        #expect(sampler.rounds > 10, "the process sampler hardly ran (\(sampler.rounds) rounds)")

        // Private files although the umask allowed everything.
        #expect(mode(fixture.dataDirectory.path) == 0o700)
        let dataFiles = try FileManager.default.contentsOfDirectory(atPath: fixture.dataDirectory.path)
        #expect(dataFiles.contains("secretd.sqlite3"))
        for file in dataFiles {
            #expect(mode(fixture.dataDirectory.appendingPathComponent(file).path) == 0o600, "\(file)")
        }
        #expect(mode(fixture.configDirectory.appendingPathComponent("access-groups.conf").path) == 0o600)
        #expect(mode(export) == 0o600)

        // Argon2id for the login keyring (after passwd re-wrapped it) and for the export.
        let database = try Database(path: fixture.dataDirectory.appendingPathComponent("secretd.sqlite3").path)
        let row = try #require(try database.rows(
            "SELECT kdf_iterations, kdf_memory_kib, kdf_lanes FROM collections WHERE name = 'login'").first)
        let stored = KDFParameters(iterations: Int(row[0].integer ?? 0), memoryKiB: Int(row[1].integer ?? 0), lanes: Int(row[2].integer ?? 0))
        #expect(atLeastMinimum(stored), "\(stored)")
        let header = try #require(FileManager.default.contents(atPath: export))
        func number(_ offset: Int) -> Int { header[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } }
        let exported = KDFParameters(iterations: number(17), memoryKiB: number(21), lanes: number(25))
        #expect(atLeastMinimum(exported), "\(exported)")
    }

    @Test("secretd cannot be traced or dumped by its own user: /proc/PID belongs to root, core limit 0",
          .enabled(if: getuid() == 0, "needs root to run secretd as another user"))
    func notDumpable() throws {
        let fixture = try SecretdFixture(otherUsers: true)
        let user: uid_t = 65534
        for directory in [fixture.root, fixture.dataDirectory, fixture.configDirectory, fixture.root.appendingPathComponent("run")] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            chown(directory.path, user, user)
        }
        let daemon = try SupervisedProcess(
            ["setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups", SecretdFixture.secretdPath, "--foreground",
             "--unlock", "--data-dir", fixture.dataDirectory.path, "--config-dir", fixture.configDirectory.path],
            environment: fixture.environment, standardInput: Data("login-password".utf8),
            logURL: FileManager.default.temporaryDirectory.appendingPathComponent("secretd-\(UUID().uuidString.prefix(6)).log"))
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon)
        let pid = try #require(daemon.helperPID)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        #expect(status.contains("Uid:\t\(user)\t\(user)"), "\(status.prefix(400))")
        // The kernel gives a non-dumpable process's /proc entries to root.
        var info = stat()
        #expect(stat("/proc/\(pid)/environ", &info) == 0)
        #expect(info.st_uid == 0, "/proc/\(pid)/environ belongs to \(info.st_uid): secretd is dumpable")
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).first == "0", "\(core ?? "")")
        daemon.stop()
    }

    @Test("a secret of megabytes stays in locked memory: no 'insecure memory' from libgcrypt, no lock refused, VmLck grows")
    func largeSecretsLocked() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let pid = try #require(daemon.helperPID)
        // secret-tool reads at most 8 KiB of a secret; secretstorage sends any size.
        let stored = try fixture.runPython("""
            import secretstorage
            bus = secretstorage.dbus_init()
            secret = bytes(range(256)) * (3 << 12)  # 3 MiB
            item = secretstorage.get_default_collection(bus).create_item("big", {"size": "3MiB"}, secret)
            print(len(item.get_secret()) == len(secret) and item.get_secret() == secret)
            """, named: "big-secret.py")
        #expect(stored.text == "True\n", "\(stored.text) \(stored.errorOutput)")
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let locked = status.split(separator: "\n").first { $0.hasPrefix("VmLck:") }.flatMap {
            Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        #expect((locked ?? 0) >= 1024, "secretd has \(locked.map(String.init) ?? "no") KiB locked")
        #expect(!daemon.log.contains("insecure memory"), "\(daemon.log)")
        #expect(!daemon.log.contains("cannot lock"), "\(daemon.log)")
    }

    // MARK: - Helpers

    func atLeastMinimum(_ parameters: KDFParameters) -> Bool {
        parameters.iterations >= Self.minimumKDF.iterations && parameters.memoryKiB >= Self.minimumKDF.memoryKiB
            && parameters.lanes >= Self.minimumKDF.lanes
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }
}

/// Reads every process's command line and environment over and over, from a thread of its
/// own, and notes any that holds one of the strings it looks for.
final class ProcessSampler: @unchecked Sendable {
    private let needles: [[UInt8]]
    private let lock = NSLock()
    private var running = false
    private var thread: Thread?
    private var _findings: Set<String> = []
    private var _rounds = 0

    init(looking for: [String]) { needles = `for`.map { Array($0.utf8) } }

    /// "pid file: secret" for every hit so far.
    var findings: Set<String> { lock.withLock { _findings } }
    /// How many times every process was read.
    var rounds: Int { lock.withLock { _rounds } }

    func start() {
        lock.withLock { running = true }
        let thread = Thread { [self] in
            while lock.withLock({ running }) {
                sampleOnce()
                lock.withLock { _rounds += 1 }
                usleep(1_000)
            }
        }
        self.thread = thread
        thread.start()
    }

    func stop() {
        lock.withLock { running = false }
    }

    private func sampleOnce() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return }
        for pid in entries where pid.first?.isNumber == true {
            for file in ["cmdline", "environ"] {
                guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/\(file)"), !data.isEmpty else { continue }
                let bytes = [UInt8](data)
                for needle in needles where contains(bytes, needle) {
                    let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "?"
                    lock.withLock { _ = _findings.insert("\(pid) (\(name.trimmingCharacters(in: .whitespacesAndNewlines))) \(file): \(String(decoding: needle, as: UTF8.self))") }
                }
            }
        }
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start] == needle[0] && haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}

import KeychainCore
import Foundation
import KeychainTestSupport
@testable import SecretService
import Testing

/// Access groups, proven with real separate executables: copies of `secretctl` and
/// `secret-tool` under different paths are different callers (`exe:` identities) to secretd.
@Suite struct AccessGroupTests: SecretServiceCalls {
    /// A fixture with a policy, and tool copies named `names` (secretctl) and `st-…` (secret-tool).
    struct Setup {
        let fixture: SecretdFixture
        let bin: URL

        init(tools names: [String] = ["alpha", "beta", "gamma"]) throws {
            fixture = try SecretdFixture()
            let bin = fixture.root.appendingPathComponent("bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            // Real paths, as /proc/PID/exe shows them.
            self.bin = URL(fileURLWithPath: bin.resolvingSymlinksInPath().path)
            for name in names {
                try ExecutableFile.copy(SecretdFixture.secretctlPath, to: self.bin.appendingPathComponent(name).path)
                try ExecutableFile.copy("/usr/bin/secret-tool", to: self.bin.appendingPathComponent("st-" + name).path)
            }
        }

        /// The identity of the copy called `name`.
        func identity(_ name: String) -> String { "exe:" + bin.appendingPathComponent(name).path }

        /// Runs the copy called `name` with `arguments`.
        func run(_ name: String, _ arguments: [String], input: String? = nil) throws -> CommandResult {
            try fixture.run([bin.appendingPathComponent(name).path] + arguments, input: input)
        }

        /// Writes `access-groups.conf` (0600).
        func writePolicy(_ text: String) throws {
            let file = fixture.configDirectory.appendingPathComponent("access-groups.conf")
            try text.write(to: file, atomically: true, encoding: .utf8)
            chmod(file.path, 0o600)
        }

        var policyText: String {
            (try? String(contentsOf: fixture.configDirectory.appendingPathComponent("access-groups.conf"), encoding: .utf8)) ?? ""
        }
    }

    @Test("items of a private group are invisible to other tools: not listed, not found by path, not creatable")
    func privateGroup() throws {
        let setup = try Setup()
        try setup.writePolicy("[group \"com.example.alpha\"]\nmember = \(setup.identity("alpha"))\n")
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        let stored = try setup.run("alpha", ["set", "--group", "com.example.alpha", "svc", "alice"], input: "alpha-secret")
        #expect(stored.status == 0, "\(stored.errorOutput)")
        let found = try setup.run("alpha", ["search", "--attr", "service=svc", "--json"])
        let path = try #require(found.text.components(separatedBy: "\"path\":\"").dropFirst().first?.split(separator: "\"").first)
        #expect(try setup.run("alpha", ["get", "svc", "alice"]).text == "alpha-secret")

        // Another tool (and the real secret-tool, and this test process) sees nothing at all.
        let other = try setup.run("beta", ["get", "svc", "alice"])
        #expect(other.status == 1 && other.text.isEmpty)
        let listed = try setup.run("beta", ["list", "--json"])
        #expect(listed.text.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(listed.text)")
        #expect(try setup.fixture.run(["secret-tool", "search", "--all", "service", "svc"]).text.isEmpty)
        #expect(try setup.run("st-beta", ["lookup", "service", "svc"]).status == 1)
        #expect(refusal {
            try setup.fixture.call(String(path), "org.freedesktop.DBus.Properties", "Get", "('org.freedesktop.Secret.Item', 'Label')")
        } == "org.freedesktop.Secret.Error.NoSuchObject")
        do {
            _ = try setup.fixture.call(String(path), "org.freedesktop.Secret.Item", "Delete")
            Issue.record("a hidden item was deleted")
        } catch {
            #expect("\(error)".contains("NoSuchObject"))
        }
        let items = try setup.fixture.call("/org/freedesktop/secrets/collection/login", "org.freedesktop.DBus.Properties", "Get",
                                           "('org.freedesktop.Secret.Collection', 'Items')")
        #expect(!items.contains(String(path)))
        let session = try setup.fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession",
                                             "('plain', <''>)").components(separatedBy: "objectpath '").last!.split(separator: "'").first!
        #expect(try setup.fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "GetSecrets",
                                       "([objectpath '\(path)'], objectpath '\(session)')") == "(@a{o(oayays)} {},)")

        // Creating in (or moving into) a group the caller is not in is refused with AccessDenied.
        let intrude = try setup.run("beta", ["set", "--group", "com.example.alpha", "svc", "mallory"], input: "x")
        #expect(intrude.status == 4, "\(intrude.errorOutput)")
        #expect(intrude.errorOutput.contains("com.example.alpha"))
        let raw = try setup.run("st-beta", ["store", "--label=x", "service", "svc", "keychain:access-group", "com.example.alpha"],
                                input: "x")
        #expect(raw.status == 1)
        #expect(raw.errorOutput.contains("org.freedesktop.DBus.Error.AccessDenied") || raw.errorOutput.contains("not a member"),
                "\(raw.errorOutput)")
        #expect(try setup.run("st-beta", ["store", "--label=x", "service", "mine", "account", "b"], input: "b").status == 0)
        // Moving an item of `default` into the group by changing its attributes is refused too.
        let mine = "/org/freedesktop/secrets/collection/login/2"
        do {
            _ = try setup.fixture.call(mine, "org.freedesktop.DBus.Properties", "Set",
                                       "('org.freedesktop.Secret.Item', 'Attributes', <{'service': 'mine', 'keychain:access-group': 'com.example.alpha'}>)")
            Issue.record("an item was moved into a group its client is not in")
        } catch {
            #expect("\(error)".contains("org.freedesktop.DBus.Error.AccessDenied"), "\(error)")
        }
        #expect(try setup.run("st-beta", ["lookup", "service", "mine"]).text == "b")
        // Still only alpha's own item in its group.
        #expect(try setup.run("alpha", ["list", "--group", "com.example.alpha", "--json"]).text.components(separatedBy: "\"account\"").count == 2)
    }

    @Test("changes to a group's items are signalled only to clients that may see them")
    func signals() throws {
        let setup = try Setup()
        try setup.writePolicy("[group \"com.example.alpha\"]\nmember = \(setup.identity("alpha"))\n")
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        // A client that called secretd (as libsecret and secretstorage do before they listen).
        let connection = try BusConnection(address: setup.fixture.bus.address)
        _ = try connection.call(Self.service, Self.properties, "Get", "('\(Self.serviceInterface)', 'Collections')")
        let outsider = SignalRecorder(listeningOn: connection)
        #expect(try setup.run("alpha", ["set", "--group", "com.example.alpha", "svc", "private"], input: "p").status == 0)
        #expect(try setup.run("alpha", ["set", "svc", "public"], input: "q").status == 0)
        // Signals from one sender arrive in order: once the second item's signal is here, the
        // first one's would have been too.
        let created = try #require(outsider.wait(for: "ItemCreated"))
        #expect(created.arguments == "(objectpath '/org/freedesktop/secrets/collection/login/2',)", "\(outsider.signals)")
        #expect(!outsider.signals.contains { $0.arguments.contains("/login/1'") || $0.path.hasSuffix("/login/1") })
    }

    @Test("a shared group is readable by its members only; unconfined tools keep full access to default")
    func sharedGroup() throws {
        let setup = try Setup()
        try setup.writePolicy("""
            # deploy tools share their credentials
            [group "com.example.deploy"]
            member = \(setup.identity("alpha"))
            member = \(setup.identity("beta"))

            """)
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.run("alpha", ["set", "--group", "com.example.deploy", "deploy", "bot"], input: "token").status == 0)
        #expect(try setup.run("beta", ["get", "deploy", "bot"]).text == "token")
        #expect(try setup.run("beta", ["get", "--group", "com.example.deploy", "deploy", "bot"]).text == "token")
        #expect(try setup.run("gamma", ["get", "deploy", "bot"]).status == 1)
        #expect(try setup.fixture.run(["secret-tool", "lookup", "service", "deploy"]).status == 1)

        // Ungrouped use is unchanged: secret-tool and every tool share `default`.
        #expect(try setup.fixture.run(["secret-tool", "store", "--label=mail", "service", "mail", "account", "a"],
                                      input: "mail-secret").status == 0)
        for tool in ["alpha", "beta", "gamma"] {
            #expect(try setup.run(tool, ["get", "mail", "a"]).text == "mail-secret")
        }
        #expect(try setup.run("gamma", ["set", "mail", "a"], input: "changed").status == 0)
        #expect(try setup.fixture.run(["secret-tool", "lookup", "service", "mail", "account", "a"]).text == "changed")
        // Items without the attribute are in `default`, and searchable as such.
        #expect(try setup.fixture.run(["secret-tool", "search", "keychain:access-group", "default"]).errorOutput.contains("mail"))
    }

    @Test("a confined app sees only its groups, and its items go to its first group")
    func confinedApp() throws {
        let setup = try Setup()
        try setup.writePolicy("""
            [group "com.example.tool"]
            [app "\(setup.identity("gamma"))"]
            groups = com.example.tool
            """)
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.fixture.run(["secret-tool", "store", "--label=mail", "service", "mail", "account", "a"],
                                      input: "mail-secret").status == 0)
        #expect(try setup.run("gamma", ["get", "mail", "a"]).status == 1)
        #expect(try setup.run("gamma", ["set", "tool", "t"], input: "tool-secret").status == 0)
        #expect(try setup.run("gamma", ["set", "tool", "t"], input: "tool-secret-2").status == 0)  // updated in place
        let shown = try setup.run("gamma", ["show", "--json", "tool", "t"])
        #expect(shown.text.contains("\"group\":\"com.example.tool\""), "\(shown.text)")
        #expect(try setup.run("gamma", ["list", "--json"]).text.components(separatedBy: "\"account\"").count == 2)
        #expect(try setup.run("gamma", ["get", "tool", "t"]).text == "tool-secret-2")
        #expect(try setup.run("alpha", ["get", "tool", "t"]).status == 1)
        let refused = try setup.run("gamma", ["set", "--group", "default", "mail", "b"], input: "x")
        #expect(refused.status == 4)

        let whoami = try setup.run("gamma", ["whoami", "--json"])
        #expect(whoami.text.contains("\"identity\":\"\(setup.identity("gamma"))\""), "\(whoami.text)")
        #expect(whoami.text.contains("\"confined\":true") && whoami.text.contains("\"default_group\":\"com.example.tool\""))
        let unconfined = try setup.run("alpha", ["whoami"])
        #expect(unconfined.text.contains("groups:        default\n"), "\(unconfined.text)")
    }

    @Test("SIGHUP reloads the policy; a malformed file is logged with its line and the previous policy stays")
    func reload() throws {
        let setup = try Setup()
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.run("alpha", ["set", "--group", "com.example.late", "s", "a"], input: "x").status == 4)
        try setup.writePolicy("[group \"com.example.late\"]\nmember = \(setup.identity("alpha"))\n")
        let pid = try #require(daemon.helperPID)
        kill(pid, SIGHUP)
        #expect(waitUntil { (try? setup.run("alpha", ["whoami"]).text.contains("com.example.late")) == true })
        #expect(try setup.run("alpha", ["set", "--group", "com.example.late", "s", "a"], input: "x").status == 0)

        try setup.writePolicy("[group \"com.example.late\"]\nmember = \(setup.identity("alpha"))\nmember = nobody\n")
        kill(pid, SIGHUP)
        #expect(waitUntil { daemon.log.contains("access-groups.conf:3:") }, "\(daemon.log)")
        #expect(try setup.run("alpha", ["get", "--group", "com.example.late", "s", "a"]).text == "x")
    }

    @Test("a malformed policy at start closes every named group and says where the problem is")
    func malformedAtStart() throws {
        let setup = try Setup()
        try setup.writePolicy("[group \"com.example.x\"]\nmember = \(setup.identity("alpha"))\nbogus line\n")
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(daemon.log.contains("access-groups.conf:3: expected 'key = value'"), "\(daemon.log)")
        #expect(try setup.run("alpha", ["set", "--group", "com.example.x", "s", "a"], input: "x").status == 4)
        #expect(try setup.run("alpha", ["set", "s", "a"], input: "x").status == 0)  // default still works
    }

    @Test("ask mode: non-members see the items locked; deny, allow once and always allow through pinentry")
    func askMode() throws {
        let setup = try Setup()
        let pinentry = try ScriptedPinentry(in: setup.fixture.root, answers: [])
        setup.fixture.environment.merge(pinentry.environment) { $1 }
        try setup.fixture.writeConfiguration("pinentry = \(pinentry.program.path)\n")
        try setup.writePolicy("[group \"com.example.ask\"]\nmember = \(setup.identity("alpha"))\nask = yes\n")
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.run("alpha", ["set", "--group", "com.example.ask", "vault", "v"], input: "asked-secret").status == 0)

        try pinentry.setAnswers(["CANCEL"])
        let denied = try setup.run("st-beta", ["lookup", "service", "vault"])
        #expect(denied.status == 1 && denied.text.isEmpty)
        #expect(pinentry.count("CONFIRM") == 1)
        #expect(pinentry.log.contains("access group “com.example.ask”"))
        #expect(pinentry.log.contains(setup.identity("st-beta")))

        try pinentry.setAnswers(["NOTOK"])  // allow once: this process only
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "asked-secret")
        try pinentry.setAnswers(["CANCEL"])
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).status == 1)  // a new process is asked again
        #expect(pinentry.count("CONFIRM") == 3)

        try pinentry.setAnswers(["OK"])  // always allow: becomes a member
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "asked-secret")
        #expect(setup.policyText.contains("member = \(setup.identity("st-beta"))"))
        #expect(setup.policyText.contains("ask = yes"))
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "asked-secret")
        #expect(pinentry.count("CONFIRM") == 4)
        // Not a member of an ask group: alpha's neighbour gamma still sees it as locked.
        let locked = try setup.fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems",
                                            "({'service': 'vault'},)")
        #expect(locked.hasPrefix("(@ao [], [objectpath"), "\(locked)")
    }

    @Test("groups add-member and remove-member need the login password or the person's confirmation")
    func changeMembership() throws {
        let setup = try Setup()
        let pinentry = try ScriptedPinentry(in: setup.fixture.root, answers: [])
        setup.fixture.environment.merge(pinentry.environment) { $1 }
        try setup.fixture.writeConfiguration("pinentry = \(pinentry.program.path)\n")
        try setup.writePolicy("# my groups\n[group \"com.example.team\"]\nask = no\n")
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        let alpha = setup.identity("alpha")

        let wrong = try setup.run("beta", ["groups", "add-member", "--password-stdin", "com.example.team", alpha], input: "nope")
        #expect(wrong.status == 4, "\(wrong.errorOutput)")
        #expect(!setup.policyText.contains(alpha))
        // The wrong password makes the next attempt wait 1 s: step over it.
        try setup.fixture.passwordClock.advance(by: 1.01)
        let added = try setup.run("beta", ["groups", "add-member", "--password-stdin", "com.example.team", alpha],
                                  input: "login-password")
        #expect(added.status == 0, "\(added.errorOutput)")
        #expect(setup.policyText.hasPrefix("# my groups\n[group \"com.example.team\"]\nask = no\nmember = \(alpha)\n"))
        #expect(try setup.run("alpha", ["set", "--group", "com.example.team", "s", "a"], input: "x").status == 0)
        let shown = try setup.run("beta", ["groups", "show", "com.example.team"])
        #expect(shown.text.contains("member:  \(alpha)"))
        #expect(try setup.run("alpha", ["groups", "list"]).text.contains("com.example.team\t1 member\t(you are a member)"))

        // Without a password, secretd asks the person (here: the login password in pinentry).
        try pinentry.setAnswers(["login-password"])
        let removed = try setup.run("beta", ["groups", "remove-member", "com.example.team", alpha])
        #expect(removed.status == 0, "\(removed.errorOutput)")
        #expect(pinentry.log.contains("wants to remove \(alpha) from the access group “com.example.team”"))
        #expect(!setup.policyText.contains(alpha))
        #expect(try setup.run("alpha", ["get", "--group", "com.example.team", "s", "a"]).status == 1)
        try pinentry.setAnswers(["CANCEL"])
        let cancelled = try setup.run("beta", ["groups", "add-member", "com.example.team", alpha])
        #expect(cancelled.status == 3, "\(cancelled.status) \(cancelled.errorOutput)")
        #expect(!setup.policyText.contains(alpha))

        // Bad input changes nothing: secretctl says what is wrong, and so does secretd over D-Bus.
        let before = setup.policyText
        let badIdentity = try setup.run("beta", ["groups", "add-member", "com.example.team", "not-an-identity"])
        #expect(badIdentity.status == 2 && badIdentity.errorOutput.contains("is not an identity"))
        #expect(try setup.run("beta", ["groups", "add-member", "default", alpha]).status == 2)
        for (group, identity) in [("com.example.team", "deploy"), ("bad group", alpha), ("default", alpha)] {
            do {
                _ = try setup.fixture.call("/org/freedesktop/secrets", "io.github.secretd.AccessGroups1", "AddMember",
                                           "('\(group)', '\(identity)', (objectpath '/', @ay [], @ay [], 'text/plain'))")
                Issue.record("AddMember accepted \(group) \(identity)")
            } catch {
                #expect("\(error)".contains("InvalidArgs"), "\(error)")
            }
        }
        #expect(setup.policyText == before)
    }

    @Test("without pinentry, a change without the password is refused at once with a way forward")
    func changeWithoutPinentry() throws {
        let setup = try Setup(tools: ["alpha"])
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        let result = try setup.run("alpha", ["groups", "add-member", "com.example.team", setup.identity("alpha")])
        #expect(result.status == 4)
        #expect(result.errorOutput.contains("--password-stdin"), "\(result.errorOutput)")
        #expect(setup.policyText.isEmpty)
    }

    @Test("a process is named by its systemd service when it runs in one (cgroup v2)")
    func unitIdentity() throws {
        let setup = try Setup(tools: ["alpha"])
        let unit = "keychain-test-\(getpid()).service"
        let cgroup = "/sys/fs/cgroup/unified/\(unit)"
        let canMove = mkdir(cgroup, 0o755) == 0
        defer { if canMove { rmdir(cgroup) } }
        if canMove {
            let daemon = try setup.fixture.start()
            defer { daemon.stop() }
            // The shell moves itself into the service's cgroup, then becomes the tool.
            let tool = setup.bin.appendingPathComponent("alpha").path
            let result = try setup.fixture.run(["/bin/sh", "-c", "echo $$ > \(cgroup)/cgroup.procs && exec \(tool) whoami"])
            #expect(result.text.contains("identity:      unit:\(unit)"), "\(result.text) \(result.errorOutput)")
        }
        // Every kind, read from a /proc tree laid out as the kernel does (also where cgroups
        // cannot be created).
        let proc = setup.fixture.root.appendingPathComponent("proc")
        func fake(_ pid: Int, cgroup: String, flatpak: String? = nil) throws {
            let directory = proc.appendingPathComponent("\(pid)")
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("root"), withIntermediateDirectories: true)
            try "\(pid) (a (b) c) S 1 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 500 1000 100\n"
                .write(to: directory.appendingPathComponent("stat"), atomically: true, encoding: .utf8)
            try cgroup.write(to: directory.appendingPathComponent("cgroup"), atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("exe").path,
                                                       withDestinationPath: "/usr/bin/tool")
            if let flatpak {
                try "[Application]\nname=\(flatpak)\nruntime=x\n"
                    .write(to: directory.appendingPathComponent("root/.flatpak-info"), atomically: true, encoding: .utf8)
            }
        }
        let user = "0::/user.slice/user-1000.slice/user@1000.service"
        try fake(10, cgroup: "\(user)/app.slice/backup.service\n")
        try fake(11, cgroup: "\(user)/app.slice/snap.firefox.firefox-1234.scope\n")
        try fake(12, cgroup: "\(user)/app.slice/app-flatpak-org.example.App-1.scope\n", flatpak: "org.example.App")
        try fake(13, cgroup: "\(user)/session.slice/vte-spawn-1.scope\n")
        func resolve(_ pid: Int32) -> String? {
            try? CallerIdentity.resolve(pid: pid, receivedAt: 1000, procRoot: proc.path).get().description
        }
        #expect(resolve(10) == "unit:backup.service")
        #expect(resolve(11) == "snap:firefox")
        #expect(resolve(12) == "flatpak:org.example.App")
        #expect(resolve(13) == "exe:/usr/bin/tool")
        #expect(CallerIdentity.resolve(pid: 10, receivedAt: 499, procRoot: proc.path) == .failure(.processChanged(10)))
        #expect(CallerIdentity.resolve(pid: 99, receivedAt: 1000, procRoot: proc.path) == .failure(.processGone(99)))
    }

    @Test("a client of another user is refused, even on a bus that lets it connect",
          .enabled(if: getuid() == 0, "switching to another uid needs root"))
    func otherUser() throws {
        let fixture = try SecretdFixture(otherUsers: true)
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=x", "service", "s", "account", "a"], input: "v").status == 0)
        var environment = fixture.environment
        environment["HOME"] = "/tmp"
        let nobody = try CommandResult.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "secret-tool", "lookup", "service", "s"],
            input: nil, environment: environment, scratch: fixture.root)
        #expect(nobody.status == 1 && nobody.text.isEmpty)
        #expect(nobody.errorOutput.contains("secretd serves only its own user"), "\(nobody.errorOutput)")
        #expect(daemon.log.contains("refused a call from uid 65534"))
    }

    /// The Debian Python, copied to `path`: a program of its own name to secretd, that runs the
    /// D-Bus clients of scripts/dbus-clients.
    func copyPython(to path: String) throws {
        try ExecutableFile.copy(URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path, to: path)
    }

    /// What `identity-probe.py` printed.
    struct Probe: Decodable {
        var identity: String
        var confined: Bool
        var items: [String]
    }

    @Test("a confined app whose program is replaced on disk while it runs (a package upgrade: a new file renamed over it) is still confined: named by the path it was started from")
    func replacedExecutableStaysConfined() throws {
        let setup = try Setup(tools: [])
        let app = setup.bin.appendingPathComponent("app").path
        try copyPython(to: app)
        try setup.writePolicy("[app \"exe:\(app)\"]\ngroups = com.example.app\n")
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.fixture.run(["secret-tool", "store", "--label=x", "service", "probe"], input: "default-secret").status == 0)
        let go = setup.fixture.root.appendingPathComponent("go").path
        let script = DBusClients.directory.appendingPathComponent("identity-probe.py").path
        let probe = try SupervisedProcess(
            [app, "-B", script, go, "probe"], environment: setup.fixture.environment,
            logURL: setup.fixture.root.appendingPathComponent("probe.log"))
        defer { probe.stop() }
        #expect(waitUntil {
            guard let pid = probe.helperPID else { return false }
            return (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == app
        })
        // The upgrade, as dpkg does it: the new file beside the old, renamed over it.
        try copyPython(to: app + ".dpkg-new")
        #expect(rename(app + ".dpkg-new", app) == 0)
        let pid = try #require(probe.helperPID)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == app + " (deleted)")
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        #expect(probe.waitForExit(timeout: 60) == 0, "\(probe.log)")
        let seen = try JSONDecoder().decode(Probe.self, from: Data(try #require(probe.log.split(separator: "\n").last).utf8))
        #expect(seen.identity == "exe:\(app)" && seen.confined, "\(probe.log)")
        #expect(seen.items.isEmpty, "a confined app saw the default group's item")
    }

    @Test("exec after connecting: a connection is named by what the process that opened it runs at its first call, so a process that execs a member while its child keeps the connection gets the member's groups (a residual risk, secretd(1))")
    func execAfterConnect() throws {
        let setup = try Setup(tools: ["alpha"])
        let app = setup.bin.appendingPathComponent("app").path
        let member = setup.bin.appendingPathComponent("member").path
        try copyPython(to: app)
        try ExecutableFile.copy("/bin/sleep", to: member)
        try setup.writePolicy("""
            [group "com.example.secret"]
            member = exe:\(member)
            member = \(setup.identity("alpha"))
            [app "exe:\(app)"]
            groups = com.example.app
            """)
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.run("alpha", ["set", "--group", "com.example.secret", "probe", "alice"], input: "group-secret").status == 0)
        let script = DBusClients.directory.appendingPathComponent("identity-probe.py").path
        let result = try setup.fixture.run([app, "-B", script, "--exec-after-connect", member, "probe"])
        let line = try #require(result.text.split(separator: "\n").last, "\(result.errorOutput)")
        let seen = try JSONDecoder().decode(Probe.self, from: Data(line.utf8))
        #expect(seen.identity == "exe:\(member)" && !seen.confined && seen.items.count == 1, "\(result.text)")
    }

    @Test("PID reuse: a process that started after the call arrived is never taken for the caller")
    func pidReuse() throws {
        let before = CallerIdentity.ticksSinceBoot()
        Thread.sleep(forTimeInterval: 0.1)  // 10 clock ticks
        let late = try SupervisedProcess(["/bin/sleep", "30"], environment: [:], standardInput: nil,
                                         logURL: FileManager.default.temporaryDirectory.appendingPathComponent("sleep-\(getpid()).log"))
        defer { late.stop() }
        // The watchdog's child is a forked shell until it has exec'd sleep.
        #expect(waitUntil {
            guard let pid = late.helperPID else { return false }
            return (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"))?.hasSuffix("/sleep") == true
        })
        let pid = try #require(late.helperPID)
        #expect(CallerIdentity.resolve(pid: pid, receivedAt: before) == .failure(.processChanged(pid)))
        let now = CallerIdentity.ticksSinceBoot()
        #expect(try CallerIdentity.resolve(pid: pid, receivedAt: now).get().description.hasSuffix("/sleep"))
    }

    @Test("the policy parser: sections, members, apps, ask, and an error for each mistake with its line")
    func parser() throws {
        let policy = try AccessPolicy.parse("""
            ; comment
            [group "a.b"]
            member = exe:/usr/bin/x
            member = unit:backup.service
            ask = yes
            [app "flatpak:org.example.App"]
            groups = a.b, default
            """, file: "f")
        #expect(policy.groups == [.init(name: "a.b", members: ["exe:/usr/bin/x", "unit:backup.service"], ask: true)])
        #expect(policy.membership(of: CallerIdentity(kind: .flatpak, name: "org.example.App"))
                == .init(groups: ["a.b", "default", "flatpak.org.example.App"], defaultGroup: "a.b", confined: true))
        #expect(policy.membership(of: CallerIdentity(kind: .flatpak, name: "org.example.Other"))
                == .init(groups: ["default", "flatpak.org.example.Other"], defaultGroup: "default", confined: false))
        #expect(policy.membership(of: CallerIdentity(kind: .exe, name: "/usr/bin/x"))
                == .init(groups: ["default", "a.b"], defaultGroup: "default", confined: false))
        for (text, message) in [
            ("member = exe:/x", "f:1: 'member' outside"),
            ("[group \"default\"]", "f:1: 'default' is not a group name"),
            ("[group \"flatpak.org.example.App\"]", "f:1: 'flatpak.org.example.App' is a Flatpak app's own group"),
            ("[app \"exe:/x\"]\ngroups = flatpak.org.example.App", "f:2: 'flatpak.org.example.App' is a Flatpak app's own group"),
            ("[group \"a\"]\nmember = /usr/bin/x", "f:2: '/usr/bin/x' is not an identity"),
            ("[group \"a\"]\nask = maybe", "f:2: ask takes yes or no"),
            ("[group \"a\"]\n[group \"a\"]", "f:2: group \"a\" is defined twice"),
            ("[app \"exe:/x\"]", "f: app \"exe:/x\" lists no groups"),
            ("[thing \"x\"]", "f:1: unknown section 'thing'"),
        ] {
            #expect(throws: ConfigurationError.self) { try AccessPolicy.parse(text, file: "f") }
            do { _ = try AccessPolicy.parse(text, file: "f") } catch { #expect(error.description.hasPrefix(message), "\(error)") }
        }
        // Edits keep the rest of the file as written.
        let text = "# top\n[group \"a\"]\nmember = exe:/x\n\n[group \"b\"]\n"
        #expect(AccessPolicyFile.adding("exe:/y", to: "a", in: text) == "# top\n[group \"a\"]\nmember = exe:/x\nmember = exe:/y\n\n[group \"b\"]\n")
        #expect(AccessPolicyFile.adding("exe:/y", to: "c", in: text) == text + "\n[group \"c\"]\nmember = exe:/y\n")
        #expect(AccessPolicyFile.removing("exe:/x", from: "a", in: text) == "# top\n[group \"a\"]\n\n[group \"b\"]\n")
    }

    @Test("CRLF files parse line by line, and an edit after a last line ending in CR stays a line (found by fuzzing)")
    func crlfPolicy() throws {
        let text = "# edited on Windows\r\n[group \"g\"]\r\nmember = exe:/bin/a\r\n\r\n[app \"unit:b.service\"]\r\ngroups = g\r"
        let policy = try AccessPolicy.parse(text, file: "f")
        #expect(policy.groups == [.init(name: "g", members: ["exe:/bin/a"], ask: false)] && policy.apps == ["unit:b.service": ["g"]])
        #expect(throws: ConfigurationError(file: "f", line: 3, message: "ask takes yes or no")) {
            try AccessPolicy.parse("[group \"g\"]\r\n\r\nask = maybe\r\n", file: "f")
        }
        // Before, "\r" + "\n" became one Character and swallowed the new member line.
        let added = AccessPolicyFile.adding("exe:/bin/b", to: "h", in: "# last line\r")
        #expect(try AccessPolicy.parse(added, file: "f").group("h")?.members == ["exe:/bin/b"])
        let removed = AccessPolicyFile.removing("exe:/bin/a", from: "g", in: text)
        #expect(try AccessPolicy.parse(removed, file: "f").group("g")?.members == [])
    }

    @Test("an identity must be writable as a member line: no line breaks or controls, no spaces around a path")
    func identitiesThatTheFileCanHold() throws {
        #expect(CallerIdentity(parsing: "exe:/opt/My Tool/bin/tool") == CallerIdentity(kind: .exe, name: "/opt/My Tool/bin/tool"))
        // A newline would add lines of its own to access-groups.conf (found by fuzzing).
        for text in ["exe:/bin/a\nmember = exe:/bin/evil", "exe:/bin/a\r", "exe:/bin/a ", "exe: /bin/a", "exe:/bin/\u{0}a",
                     "exe:/bin/a\u{2028}", "unit:a b.service", "flatpak:org.example.App\t",
                     "exe:/bin/a\u{200B}b", "exe:/bin/a\u{00A0}", "exe:/bin/a\u{0085}", "unit:a\u{3000}b.service"] {
            #expect(CallerIdentity(parsing: text) == nil, "\(text.debugDescription)")
        }
        let added = AccessPolicyFile.adding("exe:/opt/My Tool/bin/tool", to: "g", in: "")
        #expect(try AccessPolicy.parse(added, file: "f").group("g")?.members == ["exe:/opt/My Tool/bin/tool"])
    }

    /// Identities and group names, and whether each is acceptable: one table for secretd and
    /// secretctl, which both use KeychainCore's rule (secretctl once copied it and accepted
    /// control characters and trailing spaces that secretd refused).
    static let identityTable: [(String, Bool)] = [
        ("flatpak:org.example.App", true), ("snap:tool", true), ("unit:backup.service", true),
        ("exe:/usr/local/bin/deploy", true), ("exe:/opt/My Tool/bin/tool", true),
        ("exe:/usr/bin/tool ", false), ("exe: /usr/bin/tool", false), ("exe:relative/tool", false),
        ("flatpak:", false), ("unit:a b.service", false), ("flatpak:org.example.App\u{7}", false),
        ("exe:/bin/a\u{200B}b", false), ("exe:/bin/a\nmember = exe:/bin/sh", false), ("bogus:x", false), ("", false),
    ]
    static let groupTable: [(String, Bool)] = [
        ("com.example.deploy", true), ("a", true), (String(repeating: "z", count: 255), true),
        ("", false), ("default", false), ("com example", false), ("gr\u{00F6}up", false), ("a/b", false),
        (String(repeating: "z", count: 256), false), ("group\u{7}", false),
    ]

    @Test("secretctl and secretd accept the same identities and group names (one rule, one table)")
    func oneRuleForBothSides() throws {
        let secretctl = SecretdFixture.secretctlPath
        // No bus: a name secretctl accepts goes on to the provider and fails there (exit 5);
        // one it refuses is a usage error (exit 2) before any call.
        let environment = ["PATH": "/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"]
        for (identity, valid) in Self.identityTable {
            #expect((CallerIdentity(parsing: identity) != nil) == valid, "secretd: \(identity.debugDescription)")
            let result = try CommandResult.run(
                [secretctl, "groups", "add-member", "com.example.g", identity], environment: environment,
                scratch: FileManager.default.temporaryDirectory)
            #expect(result.status == (valid ? 5 : 2), "secretctl: \(identity.debugDescription): \(result.errorOutput)")
            // And as a member line of access-groups.conf, where a value is trimmed and ends at the line.
            if !identity.contains("\n"), identity == identity.trimmingWhitespace {
                let parsed = try? AccessPolicy.parse("[group \"com.example.g\"]\nmember = \(identity)\n", file: "f")
                #expect((parsed != nil) == valid, "access-groups.conf: \(identity.debugDescription)")
            }
        }
        for (group, valid) in Self.groupTable {
            #expect(AccessGroupNames.isGroupName(group) == valid, "secretd: \(group.debugDescription)")
            let result = try CommandResult.run(
                [secretctl, "groups", "add-member", group, "exe:/usr/bin/true"], environment: environment,
                scratch: FileManager.default.temporaryDirectory)
            #expect(result.status == (valid ? 5 : 2), "secretctl: \(group.debugDescription): \(result.errorOutput)")
        }
    }

    @Test("group names are ASCII letters, digits, '.', '-' and '_'; Unicode white space around a setting is trimmed")
    func groupNamesAndWhitespace() throws {
        for name in ["a", "Team.build-2_x", String(repeating: "z", count: 255)] { #expect(AccessGroupNames.isGroupName(name), "\(name)") }
        for name in ["", "default", "gr\u{00F6}up", "a b", "a/b", "\u{FF41}", "\u{0661}", String(repeating: "z", count: 256)] {
            #expect(!AccessGroupNames.isGroupName(name), "\(name.debugDescription)")
        }
        let text = "\u{00A0}[group \"g\"]\u{3000}\n\tmember\u{2003}=\u{00A0}exe:/bin/a \n[app \"unit:b.service\"]\ngroups = g ,\u{00A0}h\n[group \"h\"]\n"
        let policy = try AccessPolicy.parse(text, file: "f")
        #expect(policy.group("g")?.members == ["exe:/bin/a"] && policy.apps == ["unit:b.service": ["g", "h"]])
    }

    /// Polls `condition` for up to 20 s.
    func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            usleep(100_000)
        }
        return false
    }
}

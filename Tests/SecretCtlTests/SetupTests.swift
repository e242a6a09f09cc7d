import Foundation
import KeychainCore
import Testing

/// `secretctl setup` and `--undo` as the SSH agent's takeover sees them, run against a
/// temporary system (``TestHooks/setupRoot``: /etc, /usr/lib and /usr/share under a temporary
/// directory, with gcr's agent units and gnome-keyring's SSH autostart entry installed there) and
/// a temporary HOME. systemctl and pam-auth-update are stand-ins on PATH that make the links and
/// PAM lines the real tools make, and log each call; the booted-Debian test (scripts/e2e) runs
/// the real ones.
@Suite(.serialized) struct SetupTests {
    /// The package root (this file is Tests/SecretCtlTests/SetupTests.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    // MARK: - One user

    @Test("setup masks gcr-ssh-agent for the user (recorded), hides gnome-keyring's SSH autostart entry, links the environment.d file and points the user manager's SSH_AUTH_SOCK at secretd's socket; --undo puts back exactly what was there")
    func userTakeoverAndUndo() throws {
        let system = try TemporarySystem()
        defer { system.remove() }
        let before = try system.tree()
        let setup = try system.secretctl(["setup"])
        #expect(setup.status == 0, "\(setup.errorOutput)")
        let config = system.home + "/.config"
        let share = system.root + "/usr/share/secretd"
        let added = try system.tree().filter { before[$0.key] != $0.value }
        #expect(added == [
            config + "/systemd/user/gcr-ssh-agent.socket": "-> /dev/null",
            config + "/systemd/user/gcr-ssh-agent.service": "-> /dev/null",
            config + "/systemd/user/secretctl-setup-ssh-agent.masked":
                "# gcr-ssh-agent units secretctl setup masked; secretctl setup --undo unmasks them and removes this file\n"
                + "gcr-ssh-agent.socket\ngcr-ssh-agent.service\n",
            config + "/autostart/gnome-keyring-ssh.desktop": "-> " + share + "/autostart/gnome-keyring-ssh.desktop",
            config + "/environment.d/60-secretd-ssh-agent.conf": "-> " + share + "/environment.d/60-secretd-ssh-agent.conf",
            config + "/systemd/user/default.target.wants/secretd.socket": "-> /usr/lib/systemd/user/secretd.socket",
            config + "/systemd/user/default.target.wants/secretd.service": "-> /usr/lib/systemd/user/secretd.service",
            system.home + "/.local/share/dbus-1/services/org.freedesktop.secrets.service":
                "-> " + share + "/dbus-1/services/org.freedesktop.secrets.service",
            system.managerEnvironment: "SSH_AUTH_SOCK=\(system.runtime)/secretd/ssh-agent\n",
        ])
        #expect(try system.calls().contains("systemctl --user mask gcr-ssh-agent.socket gcr-ssh-agent.service"))
        #expect(setup.output.contains("gcr-ssh-agent: masked gcr-ssh-agent.socket and gcr-ssh-agent.service for you"), "\(setup.output)")
        // What the user manager's environment generator makes of the linked file.
        #expect(try system.generatedEnvironment(runtime: "/run/user/4242").contains("SSH_AUTH_SOCK=/run/user/4242/secretd/ssh-agent"))
        #expect(try system.generatedEnvironment(runtime: "/run/user/4242", agent: "/tmp/own/agent")
            .contains("SSH_AUTH_SOCK=/tmp/own/agent"))

        try system.clearCalls()
        let undo = try system.secretctl(["setup", "--undo"])
        #expect(undo.status == 0, "\(undo.errorOutput)")
        #expect(try system.tree() == before)
        let calls = try system.calls()
        #expect(calls.contains("systemctl --user unset-environment SSH_AUTH_SOCK"))
        #expect(calls.contains("systemctl --user unmask gcr-ssh-agent.socket gcr-ssh-agent.service"))
        #expect(calls.contains("systemctl --user start gcr-ssh-agent.socket"), "\(calls)")
    }

    @Test("where OpenSSH's own user agent is installed (Debian 13), setup masks its units too, recorded apart, takes the user manager's SSH_AUTH_SOCK from it, and --undo gives it back")
    func openSSHAgentReplaced() throws {
        let system = try TemporarySystem(managerAgent: "/run/user/1000/openssh_agent", openSSHAgent: true)
        defer { system.remove() }
        let before = try system.tree()
        let setup = try system.secretctl(["setup"])
        #expect(setup.status == 0, "\(setup.errorOutput)")
        let units = system.home + "/.config/systemd/user"
        let tree = try system.tree()
        #expect(tree[units + "/ssh-agent.socket"] == "-> /dev/null" && tree[units + "/ssh-agent.service"] == "-> /dev/null")
        #expect(tree[units + "/secretctl-setup-openssh-agent.masked"]?.hasSuffix("\nssh-agent.socket\nssh-agent.service\n") == true)
        #expect(tree[units + "/gcr-ssh-agent.socket"] == "-> /dev/null")
        #expect(tree[system.managerEnvironment] == "SSH_AUTH_SOCK=\(system.runtime)/secretd/ssh-agent\n")
        #expect(try system.calls().contains("systemctl --user mask ssh-agent.socket ssh-agent.service"))
        let undo = try system.secretctl(["setup", "--undo"])
        #expect(undo.status == 0, "\(undo.errorOutput)\(undo.output)")
        #expect(try system.tree() == before)
        #expect(try system.calls().contains("systemctl --user unmask ssh-agent.socket ssh-agent.service"))
    }

    @Test("a gcr unit the user masked before setup stays masked after --undo, and an SSH_AUTH_SOCK of another agent in the user manager is left alone")
    func userOwnChoicesKept() throws {
        let system = try TemporarySystem(managerAgent: "/home/me/.gnupg/S.gpg-agent.ssh")
        defer { system.remove() }
        let units = system.home + "/.config/systemd/user"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: units + "/gcr-ssh-agent.socket", withDestinationPath: "/dev/null")
        let before = try system.tree()
        let setup = try system.secretctl(["setup"])
        #expect(setup.status == 0, "\(setup.errorOutput)")
        #expect(try String(contentsOfFile: units + "/secretctl-setup-ssh-agent.masked", encoding: .utf8).hasSuffix("\ngcr-ssh-agent.service\n"))
        #expect(try String(contentsOfFile: system.managerEnvironment, encoding: .utf8) == "SSH_AUTH_SOCK=/home/me/.gnupg/S.gpg-agent.ssh\n")
        #expect(setup.output.contains("names another agent"), "\(setup.output)")
        let undo = try system.secretctl(["setup", "--undo"])
        #expect(undo.status == 0, "\(undo.errorOutput)")
        #expect(undo.output.contains("gcr-ssh-agent: left gcr-ssh-agent.socket masked, as it was before secretctl setup"), "\(undo.output)")
        #expect(try system.tree() == before)
        #expect(try !system.calls().contains("systemctl --user start gcr-ssh-agent.socket"))
    }

    @Test("setup --no-ssh-agent leaves the agent alone, and gives back what an earlier setup changed for it")
    func userNoAgent() throws {
        let system = try TemporarySystem()
        defer { system.remove() }
        let before = try system.tree()
        #expect(try system.secretctl(["setup", "--no-ssh-agent"]).status == 0)
        let config = system.home + "/.config"
        var tree = try system.tree()
        #expect(tree[config + "/systemd/user/gcr-ssh-agent.socket"] == nil)
        #expect(tree[config + "/environment.d/60-secretd-ssh-agent.conf"] == nil)
        #expect(tree[system.managerEnvironment] == before[system.managerEnvironment])
        #expect(try system.secretctl(["setup"]).status == 0)
        #expect(try system.tree()[config + "/systemd/user/gcr-ssh-agent.socket"] == "-> /dev/null")
        let again = try system.secretctl(["setup", "--no-ssh-agent"])
        #expect(again.status == 0, "\(again.errorOutput)")
        tree = try system.tree()
        #expect(tree.filter { $0.key.contains("gcr-ssh-agent") || $0.key.contains("environment.d") || $0.key.contains("gnome-keyring-ssh") }
            == before.filter { $0.key.contains("gcr-ssh-agent") || $0.key.contains("environment.d") || $0.key.contains("gnome-keyring-ssh") })
        #expect(tree[system.managerEnvironment] == before[system.managerEnvironment])
    }

    @Test("a file of the user's own at the environment.d path is left as it is")
    func userOwnEnvironmentFile() throws {
        let system = try TemporarySystem()
        defer { system.remove() }
        let path = system.home + "/.config/environment.d/60-secretd-ssh-agent.conf"
        try FileManager.default.createDirectory(atPath: system.home + "/.config/environment.d", withIntermediateDirectories: true)
        try "SSH_AUTH_SOCK=/mine\n".write(toFile: path, atomically: true, encoding: .utf8)
        let setup = try system.secretctl(["setup"])
        #expect(setup.status == 0)
        #expect(setup.errorOutput.contains("\(path) exists and is not secretctl's: left as it is"), "\(setup.errorOutput)")
        #expect(try system.secretctl(["setup", "--undo"]).status == 0)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "SSH_AUTH_SOCK=/mine\n")
    }

    // MARK: - Every user

    @Test("setup --system enables the PAM profile secretd-ssh-agent, masks gcr-ssh-agent for every user (recorded), hides gnome-keyring's SSH autostart entry and links the environment.d file and the login shells' script; --undo puts back exactly what was there",
          .enabled(if: getuid() == 0, "setup --system needs root"))
    func systemTakeoverAndUndo() throws {
        let system = try TemporarySystem()
        defer { system.remove() }
        let before = try system.tree()
        let setup = try system.secretctl(["setup", "--system"])
        #expect(setup.status == 0, "\(setup.errorOutput)")
        let root = system.root
        let share = root + "/usr/share/secretd"
        let changed = try system.tree().filter { before[$0.key] != $0.value }
        #expect(changed == [
            root + "/etc/pam.d/common-session": TemporarySystem.commonSession
                + "session\toptional\tpam_secretd.so\t# profile secretd\n"
                + "session\toptional\tpam_secretd.so ssh_agent ignore=sshd\t# profile secretd-ssh-agent\n",
            root + "/etc/systemd/user/gcr-ssh-agent.socket": "-> /dev/null",
            root + "/etc/systemd/user/gcr-ssh-agent.service": "-> /dev/null",
            root + "/etc/systemd/user/secretctl-setup-ssh-agent.masked":
                "# gcr-ssh-agent units secretctl setup masked; secretctl setup --undo unmasks them and removes this file\n"
                + "gcr-ssh-agent.socket\ngcr-ssh-agent.service\n",
            root + "/etc/systemd/user/default.target.wants/secretd.socket": "-> /usr/lib/systemd/user/secretd.socket",
            root + "/etc/systemd/user/default.target.wants/secretd.service": "-> /usr/lib/systemd/user/secretd.service",
            root + "/etc/xdg/autostart/gnome-keyring-ssh.desktop": TemporarySystem.sshAutostartEntry
                + "# Added by secretctl setup --system (secretd is the SSH agent); secretctl setup --system --undo removes it\n"
                + "Hidden=true\n",
            root + "/etc/environment.d/60-secretd-ssh-agent.conf": "-> " + share + "/environment.d/60-secretd-ssh-agent.conf",
            root + "/etc/profile.d/secretd-ssh-agent.sh": "-> " + share + "/profile.d/secretd-ssh-agent.sh",
            root + "/usr/share/dbus-1/services/org.freedesktop.secrets.service":
                "-> " + share + "/dbus-1/services/org.freedesktop.secrets.service",
        ])
        let calls = try system.calls()
        #expect(calls.contains("pam-auth-update --enable secretd-ssh-agent"), "\(calls)")
        #expect(calls.contains("systemctl --global mask gcr-ssh-agent.socket gcr-ssh-agent.service"), "\(calls)")

        // A second run changes nothing and says so.
        let again = try system.secretctl(["setup", "--system"])
        #expect(again.status == 0, "\(again.errorOutput)")
        #expect(again.output.contains("PAM: the secretd-ssh-agent profile was already enabled"), "\(again.output)")
        #expect(again.output.contains("gcr-ssh-agent: its units were already masked for every user"), "\(again.output)")
        #expect(try system.tree().filter { before[$0.key] != $0.value } == changed)

        // The login shells' script, as linked: secretd's socket when the session has none.
        let script = root + "/etc/profile.d/secretd-ssh-agent.sh"
        #expect(try system.shell(script, agent: nil) == system.runtime + "/secretd/ssh-agent")
        #expect(try system.shell(script, agent: "/tmp/ssh-forwarded/agent.7") == "/tmp/ssh-forwarded/agent.7")
        try FileManager.default.removeItem(atPath: system.runtime + "/secretd/ssh-agent")
        #expect(try system.shell(script, agent: nil) == "")

        let undo = try system.secretctl(["setup", "--system", "--undo"])
        #expect(undo.status == 0, "\(undo.errorOutput)")
        #expect(try system.tree() == before)
        #expect(try system.calls().contains("pam-auth-update --disable secretd-ssh-agent"))
    }

    @Test("setup --system --no-ssh-agent changes nothing of the agent's, and gives back what an earlier setup --system changed",
          .enabled(if: getuid() == 0, "setup --system needs root"))
    func systemNoAgent() throws {
        let system = try TemporarySystem()
        defer { system.remove() }
        let before = try system.tree()
        let agentPaths = { (tree: [String: String]) in
            tree.filter { $0.key.contains("ssh-agent") || $0.key.contains("gnome-keyring-ssh") || $0.key.hasSuffix("common-session") }
        }
        #expect(try system.secretctl(["setup", "--system", "--no-ssh-agent"]).status == 0)
        #expect(try !String(contentsOfFile: system.root + "/etc/pam.d/common-session", encoding: .utf8).contains("ssh_agent"))
        #expect(try system.secretctl(["setup", "--system"]).status == 0)
        #expect(try String(contentsOfFile: system.root + "/etc/pam.d/common-session", encoding: .utf8).contains("ssh_agent"))
        let off = try system.secretctl(["setup", "--system", "--no-ssh-agent"])
        #expect(off.status == 0, "\(off.errorOutput)")
        #expect(off.output.contains("PAM: disabled the secretd-ssh-agent profile"), "\(off.output)")
        let tree = try system.tree()
        var expected = agentPaths(before)
        expected[system.root + "/etc/pam.d/common-session"] = TemporarySystem.commonSession
            + "session\toptional\tpam_secretd.so\t# profile secretd\n"
        #expect(agentPaths(tree) == expected)
        #expect(try system.secretctl(["setup", "--system", "--undo"]).status == 0)
        #expect(try system.tree() == before)
    }
}

extension SetupTests {
    /// Whether the real pam-auth-update can run in a mount namespace of its own here.
    static var realPAMAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/pam-auth-update")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
    }

    @Test("with the real pam-auth-update (in a mount namespace of its own, over copies of /etc/pam.d, the profiles and /var/lib/pam): the agent line comes after pam_systemd and before the unlocking line; --no-ssh-agent takes out only the agent line; --undo leaves /etc/pam.d as it was",
          .enabled(if: realPAMAvailable, "needs root, unshare and pam-auth-update"))
    func realPamAuthUpdate() throws {
        let system = try TemporarySystem(realPAM: true)
        defer { system.remove() }
        let before = try system.tree()
        let setup = try system.secretctl(["setup", "--system"])
        #expect(setup.status == 0, "\(setup.output) \(setup.errorOutput)")
        func session() throws -> [String] {
            try String(contentsOfFile: system.root + "/etc/pam.d/common-session", encoding: .utf8).split(separator: "\n")
                .filter { !$0.hasPrefix("#") }.map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
        }
        let lines = try session()
        let systemd = try #require(lines.firstIndex(of: "session optional pam_systemd.so"), "\(lines)")
        #expect(Array(lines[(systemd + 1)...].prefix(2)) == [
            "session optional pam_secretd.so ssh_agent ignore=sshd", "session optional pam_secretd.so",
        ], "\(lines)")
        let off = try system.secretctl(["setup", "--system", "--no-ssh-agent"])
        #expect(off.status == 0, "\(off.output) \(off.errorOutput)")
        #expect(try session().filter { $0.contains("pam_secretd.so") } == ["session optional pam_secretd.so"])
        let undo = try system.secretctl(["setup", "--system", "--undo"])
        #expect(undo.status == 0, "\(undo.output) \(undo.errorOutput)")
        let after = try system.tree()
        #expect(after.filter { $0.key.contains("/etc/pam.d/") } == before.filter { $0.key.contains("/etc/pam.d/") })
        #expect(after == before)
    }

    /// A temporary system root, HOME, runtime directory (with a socket at secretd/ssh-agent)
    /// and PATH of stand-in tools for `secretctl setup`.
    struct TemporarySystem {
        /// The session stack before setup, as Debian 12's pam-auth-update leaves it (short).
        static let commonSession = "session\trequired\tpam_unix.so\nsession\toptional\tpam_systemd.so\n"
        /// gnome-keyring's SSH autostart entry (its keys, not its package's file).
        static let sshAutostartEntry = "[Desktop Entry]\nType=Application\nName=SSH Key Agent\n"
            + "Exec=/usr/bin/gnome-keyring-daemon --start --components=ssh\nOnlyShowIn=GNOME;Unity;MATE;\n"

        let directory: URL
        var root: String { directory.path + "/root" }
        var home: String { directory.path + "/home" }
        var runtime: String { directory.path + "/run" }
        var bin: String { directory.path + "/bin" }
        var log: String { directory.path + "/calls.log" }
        /// The stand-in user manager's environment, one NAME=value a line.
        var managerEnvironment: String { directory.path + "/manager-environment" }

        /// `managerAgent`: the user manager's SSH_AUTH_SOCK before setup (gcr's on Debian 13).
        /// Whether the real pam-auth-update runs (`secretctl` in a mount namespace where this
        /// root's copies of /etc/pam.d and the profiles, and a copy of /var/lib/pam, are
        /// mounted over the system's) instead of the stand-in.
        let realPAM: Bool

        /// `managerAgent`: the user manager's SSH_AUTH_SOCK before setup (gcr's on Debian 13).
        init(managerAgent: String = "/run/user/1000/gcr/ssh", realPAM: Bool = false, openSSHAgent: Bool = false) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("setup-tests-\(UUID().uuidString.prefix(12))")
            self.realPAM = realPAM
            if realPAM {
                try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
                try FileManager.default.createDirectory(atPath: root + "/usr/share", withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: "/etc/pam.d", toPath: root + "/etc/pam.d")
                try FileManager.default.copyItem(atPath: "/usr/share/pam-configs", toPath: root + "/usr/share/pam-configs")
                try FileManager.default.copyItem(atPath: "/var/lib/pam", toPath: directory.path + "/var-lib-pam")
                for name in ["secretd", "secretd-ssh-agent"] {
                    try? FileManager.default.removeItem(atPath: root + "/usr/share/pam-configs/" + name)
                }
            }
            var files: [(String, String)] = [
                (root + "/usr/lib/systemd/user/gcr-ssh-agent.socket", "[Socket]\nListenStream=%t/gcr/ssh\n"),
                (root + "/usr/lib/systemd/user/gcr-ssh-agent.service", "[Service]\nExecStart=/usr/libexec/gcr-ssh-agent\n"),
                (root + "/etc/xdg/autostart/gnome-keyring-ssh.desktop", Self.sshAutostartEntry),
                (root + "/usr/share/pam-configs/secretd", try Self.repositoryFile("pam/secretd.pam-config")),
                (root + "/usr/share/pam-configs/secretd-ssh-agent", try Self.repositoryFile("pam/secretd-ssh-agent.pam-config")),
                (root + "/usr/share/secretd/dbus-1/services/org.freedesktop.secrets.service",
                 try Self.repositoryFile("systemd/org.freedesktop.secrets.service")),
                (managerEnvironment, "SSH_AUTH_SOCK=\(managerAgent)\n"),
                (bin + "/systemctl", Self.systemctl),
                (bin + "/dpkg-divert", "#!/bin/sh\nprintf 'dpkg-divert %s\\n' \"$*\" >>\"$STUB_LOG\"\n"),
            ]
            if !realPAM {
                files += [(root + "/etc/pam.d/common-session", Self.commonSession), (bin + "/pam-auth-update", Self.pamAuthUpdate)]
            }
            if openSSHAgent {  // Debian 13's openssh-client
                files += [
                    (root + "/usr/lib/systemd/user/ssh-agent.socket", "[Socket]\nListenStream=%t/openssh_agent\n"),
                    (root + "/usr/lib/systemd/user/ssh-agent.service", "[Service]\nExecStart=/usr/bin/ssh-agent -D\n"),
                ]
            }
            // What make install puts in PREFIX/share/secretd from setup/.
            let setup = SetupTests.packageRoot.appendingPathComponent("setup")
            let shipped = try FileManager.default.subpathsOfDirectory(atPath: setup.path).filter {
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(atPath: setup.path + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
            }
            for (path, text) in try files + shipped.map({ (root + "/usr/share/secretd/" + $0, try Self.repositoryFile("setup/" + $0)) }) {
                try FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try text.write(toFile: path, atomically: true, encoding: .utf8)
            }
            for tool in ["systemctl", "pam-auth-update", "dpkg-divert"] { chmod(bin + "/" + tool, 0o755) }
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(
                atPath: runtime + "/secretd", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            chmod(runtime, 0o700)
            try Self.bind(runtime + "/secretd/ssh-agent")
        }

        static func repositoryFile(_ path: String) throws -> String {
            try String(contentsOf: SetupTests.packageRoot.appendingPathComponent(path), encoding: .utf8)
        }

        /// Runs the built secretctl with the temporary system's environment.
        func secretctl(_ arguments: [String]) throws -> (status: Int32, output: String, errorOutput: String) {
            let namespace = realPAM
                ? ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                   "mount --bind \"$1\" /etc/pam.d && mount --bind \"$2\" /usr/share/pam-configs && mount --bind \"$3\" /var/lib/pam "
                       + "&& shift 3 && exec \"$@\"",
                   "sh", root + "/etc/pam.d", root + "/usr/share/pam-configs", directory.path + "/var-lib-pam"]
                : []
            return try run(namespace + [VerbTests.secretctl] + arguments, environment: [
                "HOME": home, "XDG_RUNTIME_DIR": runtime, "PATH": bin + ":/usr/sbin:/usr/bin:/sbin:/bin", TestHooks.setupRoot: root,
                "STUB_LOG": log, "STUB_MANAGER_ENVIRONMENT": managerEnvironment,
                "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus", "LANG": "C",
            ])
        }

        /// The calls the stand-in tools logged, one a line.
        func calls() throws -> [String] {
            guard FileManager.default.fileExists(atPath: log) else { return [] }
            return try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        }

        func clearCalls() throws { try? FileManager.default.removeItem(atPath: log) }

        /// Removes the temporary directory.
        func remove() { try? FileManager.default.removeItem(at: directory) }

        /// Every file and link under the root, HOME and the manager's environment: a link as
        /// "-> target", a file as its text.
        func tree() throws -> [String: String] {
            var entries: [String: String] = [:]
            for base in [root, home] {
                for relative in try FileManager.default.subpathsOfDirectory(atPath: base) {
                    let path = base + "/" + relative
                    if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) {
                        entries[path] = "-> " + target
                        continue
                    }
                    var isDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                        entries[path] = try String(contentsOfFile: path, encoding: .utf8)
                    }
                }
            }
            entries[managerEnvironment] = try String(contentsOfFile: managerEnvironment, encoding: .utf8)
            return entries
        }

        /// The SSH_AUTH_SOCK systemd's environment.d generator gives a user manager of this
        /// HOME whose runtime directory is `runtime` (and whose environment has `agent`).
        func generatedEnvironment(runtime: String, agent: String? = nil) throws -> [String] {
            var environment = ["XDG_CONFIG_HOME": home + "/.config", "XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin"]
            environment["SSH_AUTH_SOCK"] = agent
            let result = try run(["/usr/lib/systemd/user-environment-generators/30-systemd-environment-d-generator"],
                                 environment: environment)
            #expect(result.status == 0, "\(result.errorOutput)")
            return result.output.split(separator: "\n").map(String.init).filter { $0.hasPrefix("SSH_AUTH_SOCK=") }
        }

        /// The SSH_AUTH_SOCK a login shell (dash) has after sourcing `script`, starting with `agent`.
        func shell(_ script: String, agent: String?) throws -> String {
            var environment = ["XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin"]
            environment["SSH_AUTH_SOCK"] = agent
            let result = try run(["/bin/sh", "-c", ". \"$0\"; printf %s \"${SSH_AUTH_SOCK-}\"", script], environment: environment)
            #expect(result.status == 0, "\(result.errorOutput)")
            return result.output
        }

        private func run(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, output: String, errorOutput: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: arguments[0])
            process.arguments = Array(arguments.dropFirst())
            process.environment = environment
            let output = Pipe()
            let errorOutput = Pipe()
            process.standardOutput = output
            process.standardError = errorOutput
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let out = output.fileHandleForReading.readDataToEndOfFile()
            let err = errorOutput.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
        }

        /// Leaves a Unix socket at `path` (nobody listens: the script and the module look only).
        static func bind(_ path: String) throws {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(bound == 0)
        }

        /// systemctl as setup uses it: masks and enablement as links in the scope's directory,
        /// the user manager's environment in a file (starting gcr's socket sets its
        /// SSH_AUTH_SOCK, as gcr4's unit does); every call logged.
        static let systemctl = #"""
            #!/bin/sh
            printf 'systemctl %s\n' "$*" >>"$STUB_LOG"
            case $1 in
            --global) dir=$SECRETCTL_TEST_ROOT/etc/systemd/user ;;
            --user) dir=${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user ;;
            *) exit 1 ;;
            esac
            shift
            [ "$1" = --quiet ] && shift
            verb=$1
            shift
            environment=$STUB_MANAGER_ENVIRONMENT
            case $verb in
            mask) mkdir -p "$dir"; for unit; do [ "$unit" = --now ] || ln -sfn /dev/null "$dir/$unit"; done ;;
            unmask) for unit; do rm -f "$dir/$unit"; done ;;
            enable) mkdir -p "$dir/default.target.wants"
                for unit; do [ "$unit" = --now ] || ln -sfn "/usr/lib/systemd/user/$unit" "$dir/default.target.wants/$unit"; done ;;
            disable) for unit; do rm -f "$dir/default.target.wants/$unit"; done ;;
            show-environment) cat "$environment" ;;
            set-environment) for pair; do
                    grep -v "^${pair%%=*}=" "$environment" >"$environment.new"; printf '%s\n' "$pair" >>"$environment.new"
                    mv "$environment.new" "$environment"; done ;;
            unset-environment) for name; do grep -v "^$name=" "$environment" >"$environment.new"; mv "$environment.new" "$environment"; done ;;
            # gcr4's socket, and OpenSSH's on Debian 13, set the manager's SSH_AUTH_SOCK once they
            # listen (ExecStartPost).
            start) case $1 in
                gcr-ssh-agent.socket) "$0" --user set-environment SSH_AUTH_SOCK=/run/user/1000/gcr/ssh ;;
                ssh-agent.socket) "$0" --user set-environment SSH_AUTH_SOCK=/run/user/1000/openssh_agent ;;
                esac ;;
            is-enabled|stop) ;;
            *) exit 1 ;;
            esac
            """#

        /// pam-auth-update --enable/--disable: each profile's Session lines in common-session,
        /// marked with the profile's name.
        static let pamAuthUpdate = #"""
            #!/bin/sh
            printf 'pam-auth-update %s\n' "$*" >>"$STUB_LOG"
            action=$1
            shift
            file=$SECRETCTL_TEST_ROOT/etc/pam.d/common-session
            for profile; do
                grep -v "# profile $profile\$" "$file" >"$file.new"; mv "$file.new" "$file"
                [ "$action" = --enable ] || continue
                awk -v p="$profile" '/^Session:/ { on = 1; next } /^[^\t]/ { on = 0 } on { sub(/^\t/, ""); print "session\t" $0 "\t# profile " p }' \
                    "$SECRETCTL_TEST_ROOT/usr/share/pam-configs/$profile" >>"$file"
            done
            """#
    }
}

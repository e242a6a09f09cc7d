import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// pam_secretd.so's `ssh_agent` option: the session line of the pam-auth-update profile
/// secretd-ssh-agent (pam/secretd-ssh-agent.pam-config, read here so that the shipped line is the
/// one tested) points SSH_AUTH_SOCK at secretd's agent socket. pam_exec, after it in the stack,
/// writes the PAM environment the session ends up with to a file.
extension PAMModuleTests {
    /// The options of the profile's session line, after `pam_secretd.so`.
    static func agentProfileOptions() throws -> String {
        let profile = try String(
            contentsOf: PAMStack.packageRoot.appendingPathComponent("pam/secretd-ssh-agent.pam-config"), encoding: .utf8)
        let line = try #require(profile.split(separator: "\n").first { $0.contains("pam_secretd.so") })
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        #expect(words.first == "optional")
        return words.drop { $0 != "pam_secretd.so" }.dropFirst().joined(separator: " ")
    }

    /// A stack with the agent line before the module's own session line (pam-auth-update puts
    /// secretd-ssh-agent before secretd), an SSH_AUTH_SOCK of the user's own from pam_env when
    /// `existing` is set, and pam_exec writing the PAM environment to `environment.txt`.
    func agentStack(directory: URL, runtime: URL, name: String = "secretd-test", agentOptions: String? = nil,
                    existing: String? = nil) throws -> PAMStack {
        let options = try agentOptions ?? Self.agentProfileOptions()
        let own = directory.appendingPathComponent("own-agent.conf")
        try (existing.map { "SSH_AUTH_SOCK OVERRIDE=\($0)\n" } ?? "").write(to: own, atomically: true, encoding: .utf8)
        let output = directory.appendingPathComponent("pam-\(name)/environment.txt")
        return try PAMStack(
            directory: directory, runtime: runtime, name: name, template: """
                auth      requisite  MATRIX
                auth      optional   SET_ITEMS
                auth      optional   MODULE
                session   optional   pam_env.so conffile=ENVCONF readenv=0
                session   optional   pam_env.so conffile=\(own.path) readenv=0
                session   optional   MODULE \(options)
                session   optional   MODULE
                session   optional   pam_exec.so quiet log=\(output.path) /usr/bin/env
                """)
    }

    /// The SSH_AUTH_SOCK of the PAM environment the last login of `stack` left (nil: unset).
    func sessionAgent(_ stack: PAMStack) throws -> String? {
        let url = stack.directory.appendingPathComponent("environment.txt")
        let text = try String(contentsOf: url, encoding: .utf8)
        try FileManager.default.removeItem(at: url)
        return text.split(separator: "\n").first { $0.hasPrefix("SSH_AUTH_SOCK=") }.map { String($0.dropFirst(14)) }
    }

    /// A runtime directory in `root` (0700) with secretd's directory (0700) and, when `socket`,
    /// a socket at secretd/ssh-agent.
    func agentRuntime(in root: URL, socket: Bool = true) throws -> URL {
        let runtime = root.appendingPathComponent("run")
        let directory = runtime.appendingPathComponent("secretd")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(chmod(runtime.path, 0o700) == 0 && chmod(directory.path, 0o700) == 0)
        if socket { try bindAndClose(directory.appendingPathComponent("ssh-agent").path) }
        return runtime
    }

    @Test("the module, secretd and secretctl name the agent socket alike (login-control.h, SSHAgentNames)")
    func agentSocketName() throws {
        let header = try String(
            contentsOf: PAMStack.packageRoot.appendingPathComponent("Sources/CLoginControl/login-control.h"), encoding: .utf8)
        #expect(header.contains("#define SECRETD_SSH_AGENT_SOCKET \"\(SSHAgentNames.socketName)\"\n"))
        #expect(header.contains("#define SECRETD_CONTROL_DIRECTORY \"\(SSHAgentNames.directoryName)\"\n"))
    }

    @Test("the profile secretd-ssh-agent's session line is pam_secretd.so ssh_agent ignore=sshd, for sessions only")
    func agentProfile() throws {
        #expect(try Self.agentProfileOptions() == "ssh_agent ignore=sshd")
        let profile = try String(
            contentsOf: PAMStack.packageRoot.appendingPathComponent("pam/secretd-ssh-agent.pam-config"), encoding: .utf8)
        #expect(profile.contains("Default: no\n"))
        #expect(!profile.contains("Auth:") && !profile.contains("Password:"))
    }

    @Test("an ssh_agent line sets SSH_AUTH_SOCK to <XDG_RUNTIME_DIR>/secretd/ssh-agent at session open when the socket is there")
    func agentSocketSet() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let runtime = try agentRuntime(in: root)
        let stack = try agentStack(directory: root, runtime: runtime)
        let login = try stack.login("login-password")
        #expect(login.status == 0, "\(login.errorOutput)")
        #expect(try sessionAgent(stack) == runtime.path + "/secretd/ssh-agent")
        // auth alone opens no session: nothing to set.
        #expect(try stack.login("login-password", operations: ["authenticate"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: stack.directory.appendingPathComponent("environment.txt").path))
    }

    @Test("an SSH_AUTH_SOCK the session has already (the user's own, from pam_env) is kept")
    func agentSocketKept() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let stack = try agentStack(directory: root, runtime: try agentRuntime(in: root), existing: "/tmp/ssh-forwarded/agent.42")
        #expect(try stack.login("login-password").status == 0)
        #expect(try sessionAgent(stack) == "/tmp/ssh-forwarded/agent.42")
    }

    @Test("not set for sshd (ignore=sshd: sshd would copy it over a forwarded agent's), without the option, or without secretd's socket",
          arguments: ["sshd", "no option", "no socket", "stale file", "open directory"])
    func agentSocketNotSet(_ situation: String) throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let runtime = try agentRuntime(in: root, socket: situation != "no socket" && situation != "stale file")
        let socket = runtime.path + "/secretd/ssh-agent"
        if situation == "stale file" { #expect(FileManager.default.createFile(atPath: socket, contents: Data())) }
        if situation == "open directory" { #expect(chmod(runtime.path + "/secretd", 0o755) == 0) }
        let stack = try agentStack(directory: root, runtime: runtime, name: situation == "sshd" ? "sshd" : "secretd-test",
                                   agentOptions: situation == "no option" ? "" : nil)
        let login = try stack.login("login-password")
        #expect(login.status == 0, "\(login.errorOutput)")
        #expect(try sessionAgent(stack) == nil)
    }

    @Test("not set when the socket is another user's", .enabled(if: getuid() == 0, "needs root to give files away"))
    func agentSocketForeign() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let runtime = try agentRuntime(in: root)
        #expect(chown(runtime.path + "/secretd/ssh-agent", Self.nobody, Self.nobody) == 0)
        let stack = try agentStack(directory: root, runtime: runtime)
        #expect(try stack.login("login-password").status == 0)
        #expect(try sessionAgent(stack) == nil)
    }

    @Test("with the agent line first, the module's own session line still unlocks: the agent line leaves the password alone")
    func agentLineLeavesPassword() throws {
        let (fixture, daemon, _) = try start(password: "login-password")
        defer { daemon.stop() }
        try lock(fixture)
        let runtime = fixture.root.appendingPathComponent("run")
        #expect(FileManager.default.fileExists(atPath: runtime.path + "/secretd/ssh-agent"), "secretd binds its agent socket")
        let stack = try agentStack(directory: fixture.root, runtime: runtime)
        let login = try stack.login("login-password")
        #expect(login.status == 0, "\(login.errorOutput)")
        #expect(try loginKeyring(fixture) == .unlocked)
        #expect(try sessionAgent(stack) == runtime.path + "/secretd/ssh-agent")
    }

    @Test("a real sshd (under pam_wrapper) copies a PAM SSH_AUTH_SOCK over the one of an agent forwarded with ssh -A, so the profile's line skips sshd and a forwarded agent is kept; the login shells' script sets secretd's only in a session without one",
          .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd"),
                   "needs root and openssh-server, which is not in DEB_TEST: installing it starts an SSH server on the machine"))
    func sshdKeepsForwardedAgent() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let runtime = try agentRuntime(in: root)
        let secretdAgent = runtime.path + "/secretd/ssh-agent"
        let tools = ["PATH": "/usr/bin:/bin:/usr/sbin", "LANG": "C"]
        // sshd's privilege separation directory, as the openssh-server unit makes it.
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        for key in ["host", "client"] {
            let made = try CommandResult.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", root.path + "/" + key],
                                             environment: tools, scratch: root)
            #expect(made.status == 0, "\(made.errorOutput)")
        }
        try FileManager.default.copyItem(atPath: root.path + "/client.pub", toPath: root.path + "/authorized_keys")
        let environmentFile = root.appendingPathComponent("env.conf")
        try "XDG_RUNTIME_DIR OVERRIDE=\(runtime.path)\n".write(to: environmentFile, atomically: true, encoding: .utf8)
        let services = root.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        /// sshd's PAM service: the session's runtime directory (pam_systemd's part), then the
        /// agent line with `options`.
        func service(_ options: String) throws {
            try """
                auth     required  pam_permit.so
                account  required  pam_permit.so
                session  optional  pam_env.so conffile=\(environmentFile.path) readenv=0
                session  optional  \(PAMStack.module) \(options)

                """.write(to: services.appendingPathComponent("sshd"), atomically: true, encoding: .utf8)
        }
        try service(try Self.agentProfileOptions())

        // The agent ssh -A forwards.
        let clientAgent = root.path + "/client-agent.sock"
        let forwarded = try SupervisedProcess(["ssh-agent", "-D", "-a", clientAgent], environment: tools,
                                              logURL: root.appendingPathComponent("ssh-agent.log"))
        defer { forwarded.stop() }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: clientAgent) { usleep(50_000) }

        // A port of its own: sshd exits at once when it cannot bind, and another is tried.
        var sshd: SupervisedProcess?
        var port = 0
        for attempt in 0..<10 where sshd == nil {
            port = 20000 + Int.random(in: 0..<30000)
            let config = root.path + "/sshd_config-\(attempt)"
            try """
                Port \(port)
                ListenAddress 127.0.0.1
                HostKey \(root.path)/host
                PidFile none
                AuthorizedKeysFile \(root.path)/authorized_keys
                StrictModes no
                UsePAM yes
                AllowAgentForwarding yes
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                PermitRootLogin prohibit-password

                """.write(toFile: config, atomically: true, encoding: .utf8)
            let started = try SupervisedProcess(
                ["/usr/sbin/sshd", "-D", "-e", "-f", config],
                environment: tools.merging(["LD_PRELOAD": "libpam_wrapper.so", "PAM_WRAPPER": "1",
                                            "PAM_WRAPPER_SERVICE_DIR": services.path]) { $1 },
                logURL: root.appendingPathComponent("sshd-\(attempt).log"))
            var listening = false
            for _ in 0..<100 where started.isRunning && !listening {
                usleep(50_000)
                listening = started.log.contains("Server listening")
            }
            if listening { sshd = started } else { started.stop() }
        }
        let daemon = try #require(sshd, "sshd did not start")
        defer { daemon.stop() }
        let script = PAMStack.packageRoot.appendingPathComponent("setup/profile.d/secretd-ssh-agent.sh").path
        /// The SSH_AUTH_SOCK of an ssh login's command (after the login shells' script when
        /// `profile`), with the client's agent forwarded when `forward`.
        func login(forward: Bool, profile: Bool = false) throws -> String {
            let command = (profile ? ". \(script); " : "") + "printf %s \"${SSH_AUTH_SOCK-}\""
            let result = try CommandResult.run(
                ["ssh", "-F", "/dev/null", forward ? "-A" : "-a", "-p", String(port), "-i", root.path + "/client", "-o", "BatchMode=yes",
                 "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                 "\(user())@127.0.0.1", command],
                environment: tools.merging(["SSH_AUTH_SOCK": clientAgent]) { $1 }, scratch: root, timeout: 30)
            #expect(result.status == 0, "\(result.errorOutput) \(daemon.log)")
            return result.text
        }
        func user() -> String { String(cString: getpwuid(getuid()).pointee.pw_name) }
        func isForwarded(_ socket: String) -> Bool { socket.hasPrefix("/tmp/ssh-") && socket.contains("/agent.") }

        // The shipped line (ignore=sshd): the forwarded agent is kept, and PAM sets none without one.
        #expect(isForwarded(try login(forward: true)))
        #expect(try login(forward: false) == "")
        // The login shells' script: the forwarded agent is kept, secretd's set without one.
        #expect(isForwarded(try login(forward: true, profile: true)))
        #expect(try login(forward: false, profile: true) == secretdAgent)
        // The same line without ignore=sshd: sshd puts PAM's over the forwarded agent's.
        try service("ssh_agent")
        #expect(try login(forward: true) == secretdAgent)
        #expect(try login(forward: false) == secretdAgent)
    }
}

import Foundation
import KeychainTestSupport
import Testing

/// secretd's SSH agent, driven by OpenSSH's own clients (`ssh-add`, `ssh-keygen -Y`, `ssh`) and by
/// a raw client for what OpenSSH never sends. Each test has its own private bus, data directory
/// and `XDG_RUNTIME_DIR`; keys are made with `ssh-keygen` in the test's directory.
@Suite(.serialized) struct SSHAgentTests {
    static let login = "/org/freedesktop/secrets/collection/login"
    static let service = "/org/freedesktop/secrets"

    /// Every key type the agent signs with: ssh-keygen's `-t` and `-b`.
    static let keyTypes: [(name: String, type: String, bits: String?)] = [
        ("ed25519", "ed25519", nil), ("ecdsa256", "ecdsa", "256"), ("ecdsa384", "ecdsa", "384"), ("ecdsa521", "ecdsa", "521"),
        ("rsa", "rsa", "2048"),
    ]

    /// A secretd with an unlocked login keyring, and the environment its agent's clients use.
    struct Agent {
        let fixture: SecretdFixture
        var daemon: SupervisedProcess
        let keys: URL
        /// The stand-in for the person, when the test configured one.
        let pinentry: ScriptedPinentry?

        /// With `pinentryAnswers`, secretd.conf names a scripted pinentry that gives them. With
        /// `socketActivated`, secretd is started as systemd's `secretd.socket` starts it: by
        /// `systemd-socket-activate`, which listens on the login and agent sockets and starts
        /// secretd with them at the first connection.
        init(pinentryAnswers: [String]? = nil, socketActivated: Bool = false) throws {
            try #require(
                FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh-add"), "needs the Debian package openssh-client (the Makefile's DEB_TEST)")
            fixture = try SecretdFixture()
            if let pinentryAnswers {
                let pinentry = try ScriptedPinentry(in: fixture.root, answers: pinentryAnswers)
                fixture.environment.merge(pinentry.environment) { $1 }
                try fixture.writeConfiguration("pinentry = \(pinentry.program.path)\n")
                self.pinentry = pinentry
            } else {
                pinentry = nil
            }
            if socketActivated {
                let run = fixture.root.appendingPathComponent("run/secretd")
                try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                // systemd-socket-activate passes its child only the variables named with -E.
                let variables = fixture.environment.sorted { $0.key < $1.key }.flatMap { ["-E", "\($0.key)=\($0.value)"] }
                daemon = try SupervisedProcess(
                    ["systemd-socket-activate", "-l", run.appendingPathComponent("control").path, "-l",
                     run.appendingPathComponent("ssh-agent").path] + variables + [SecretdFixture.secretdPath, "--foreground", "--data-dir",
                     fixture.dataDirectory.path, "--config-dir", fixture.configDirectory.path, "--unlock"],
                    environment: fixture.environment, standardInput: Data("login-password".utf8),
                    logURL: fixture.root.appendingPathComponent("secretd-activated.log"))
            } else {
                daemon = try fixture.start()
            }
            keys = fixture.root.appendingPathComponent("keys")
            try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            _ = try waitForSocket()
        }

        var socket: String { fixture.root.appendingPathComponent("run/secretd/ssh-agent").path }

        var environment: [String: String] { fixture.environment.merging(["SSH_AUTH_SOCK": socket]) { $1 } }

        /// Waits until secretd listens on the agent socket (it binds it as it starts serving).
        @discardableResult
        func waitForSocket() throws -> Bool {
            for _ in 0..<200 {
                if FileManager.default.fileExists(atPath: socket) { return true }
                usleep(50_000)
            }
            throw HarnessError("secretd did not bind \(socket): \(daemon.log)")
        }

        /// Runs a client with `SSH_AUTH_SOCK` set to the agent.
        func run(_ arguments: [String], input: String? = nil, timeout: Double = 60) throws -> CommandResult {
            try CommandResult.run(
                arguments, input: input.map { Data($0.utf8) }, environment: environment, scratch: fixture.root, timeout: timeout)
        }

        /// Makes a key without a passphrase; returns its private key's path (`.pub` beside it).
        func makeKey(_ name: String, type: String, bits: String? = nil) throws -> String {
            let path = keys.appendingPathComponent(name).path
            let result = try run(["ssh-keygen", "-q", "-t", type] + (bits.map { ["-b", $0] } ?? []) + ["-N", "", "-C", "\(name)@test", "-f", path])
            guard result.status == 0 else { throw HarnessError("ssh-keygen failed: \(result.errorOutput)") }
            return path
        }

        /// The fingerprint `ssh-keygen -l` shows for the key at `path`.
        func fingerprint(_ path: String) throws -> String {
            let line = try run(["ssh-keygen", "-l", "-E", "sha256", "-f", path + ".pub"]).text
            return String(line.split(separator: " ")[1])
        }

        /// The `.pub` file's type and key (without the comment).
        func publicKey(_ path: String) throws -> String {
            let line = try String(contentsOfFile: path + ".pub", encoding: .utf8)
            return line.split(separator: " ").prefix(2).joined(separator: " ")
        }

        func lock() throws {
            _ = try fixture.call(SSHAgentTests.service, "org.freedesktop.Secret.Service", "Lock", "([objectpath '\(SSHAgentTests.login)'],)")
        }

        func unlock() throws {
            let result = try fixture.run([SecretdFixture.secretctlPath, "unlock", "--password-stdin"], input: "login-password")
            guard result.status == 0 else { throw HarnessError("secretctl unlock failed: \(result.errorOutput)") }
        }

        /// Signs `message` with the agent's key for `path` (its `.pub` only) and verifies the
        /// signature with `ssh-keygen -Y verify`; returns the two results.
        func signAndVerify(_ path: String, message: String = "a commit to sign\n") throws -> (sign: CommandResult, verify: CommandResult?) {
            let file = keys.appendingPathComponent("message-\(UUID().uuidString.prefix(6))").path
            try message.write(toFile: file, atomically: true, encoding: .utf8)
            let sign = try run(["ssh-keygen", "-Y", "sign", "-f", path + ".pub", "-n", "git", file])
            guard sign.status == 0 else { return (sign, nil) }
            let signers = keys.appendingPathComponent("allowed_signers").path
            try "signer@test \(try publicKey(path))\n".write(toFile: signers, atomically: true, encoding: .utf8)
            let verify = try run(["ssh-keygen", "-Y", "verify", "-f", signers, "-I", "signer@test", "-n", "git", "-s", file + ".sig"], input: message)
            return (sign, verify)
        }

        /// Runs the raw agent client (``SSHAgentTests/rawClient``) with `arguments`.
        func raw(_ arguments: [String]) throws -> [String] {
            let result = try fixture.runPython(SSHAgentTests.rawClient, named: "raw-agent.py", [socket] + arguments)
            guard result.status == 0 else { throw HarnessError("the raw client failed: \(result.errorOutput)") }
            return result.text.split(separator: "\n").map(String.init)
        }
    }

    /// A raw agent client. Each argument is one step: `open:NAME` opens a connection, `send:NAME:HEX`
    /// sends bytes as they are, `recv:NAME` prints the type of the reply (or `closed`),
    /// `sign:NAME:FLAGS` signs "data" with the first listed key and prints the reply's type and,
    /// when signed, the signature's algorithm; `signblob:NAME:HEX` asks the key whose public blob
    /// is HEX (listed or not) to sign "data" and prints the reply's type.
    static let rawClient = """
        import socket, struct, sys
        path = sys.argv[1]
        conns = {}
        def recv_exact(s, n):
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk:
                    return None
                data += chunk
            return data
        def recv(s):
            header = recv_exact(s, 4)
            if header is None:
                return None
            return recv_exact(s, struct.unpack(">I", header)[0])
        def string(b, off):
            n = struct.unpack(">I", b[off:off + 4])[0]
            return b[off + 4:off + 4 + n], off + 4 + n
        def frame(body):
            return struct.pack(">I", len(body)) + body
        def sign(s, blob, flags):
            s.sendall(frame(b"\\x0d" + struct.pack(">I", len(blob)) + blob + struct.pack(">I", 4) + b"data" + struct.pack(">I", flags)))
            return recv(s)
        for step in sys.argv[2:]:
            parts = step.split(":")
            if parts[0] == "open":
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(20)
                s.connect(path)
                conns[parts[1]] = s
            elif parts[0] == "send":
                conns[parts[1]].sendall(bytes.fromhex(parts[2]))
            elif parts[0] == "recv":
                reply = recv(conns[parts[1]])
                print("closed" if reply is None else reply[0])
            elif parts[0] == "signblob":
                print(sign(conns[parts[1]], bytes.fromhex(parts[2]), 0)[0])
            elif parts[0] == "sign":
                s = conns[parts[1]]
                s.sendall(frame(b"\\x0b"))
                reply = recv(s)
                blob, _ = string(reply, 5)
                reply = sign(s, blob, int(parts[2]))
                if reply[0] == 14:
                    signature, _ = string(reply, 1)
                    algorithm, _ = string(signature, 0)
                    print(14, algorithm.decode())
                else:
                    print(reply[0])
        """

    @Test("ssh-add keeps every key type; -l and -L list them; ssh-keygen -Y signs through the agent and the signature verifies")
    func everyKeyType() throws {
        let agent = try Agent()
        var fingerprints: [String] = []
        for key in Self.keyTypes {
            let path = try agent.makeKey(key.name, type: key.type, bits: key.bits)
            let added = try agent.run(["ssh-add", path])
            #expect(added.status == 0, "\(key.name): \(added.errorOutput) \(agent.daemon.log)")
            fingerprints.append(try agent.fingerprint(path))
            // From now on only the agent holds the private key.
            try FileManager.default.removeItem(atPath: path)
        }
        let listed = try agent.run(["ssh-add", "-l"])
        #expect(listed.status == 0)
        for (fingerprint, key) in zip(fingerprints, Self.keyTypes) {
            #expect(listed.text.contains(fingerprint), "\(key.name) missing from: \(listed.text)")
            #expect(listed.text.contains("\(key.name)@test"))
        }
        let publicKeys = try agent.run(["ssh-add", "-L"]).text.split(separator: "\n").map(String.init)
        #expect(publicKeys.count == Self.keyTypes.count)
        for key in Self.keyTypes {
            let path = agent.keys.appendingPathComponent(key.name).path
            #expect(publicKeys.contains("\(try agent.publicKey(path)) \(key.name)@test"), "\(key.name): \(publicKeys)")
            let (sign, verify) = try agent.signAndVerify(path)
            #expect(sign.status == 0, "\(key.name): \(sign.errorOutput)")
            #expect(verify?.status == 0, "\(key.name): \(verify?.errorOutput ?? "") \(verify?.text ?? "")")
            #expect(verify?.text.contains("Good \"git\" signature for signer@test") == true, "\(key.name)")
        }
        // A signature of other text does not verify (the check above is a real one).
        let path = agent.keys.appendingPathComponent("ed25519").path
        let file = agent.keys.appendingPathComponent("tampered").path
        try "original\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try agent.run(["ssh-keygen", "-Y", "sign", "-f", path + ".pub", "-n", "git", file]).status == 0)
        let signers = agent.keys.appendingPathComponent("allowed_signers").path
        try "signer@test \(try agent.publicKey(path))\n".write(toFile: signers, atomically: true, encoding: .utf8)
        let forged = try agent.run(
            ["ssh-keygen", "-Y", "verify", "-f", signers, "-I", "signer@test", "-n", "git", "-s", file + ".sig"], input: "altered\n")
        #expect(forged.status != 0)
    }

    @Test("ssh-add -d removes one key and -D every key, from the agent and the keychain")
    func removal() throws {
        let agent = try Agent()
        let first = try agent.makeKey("first", type: "ed25519")
        let second = try agent.makeKey("second", type: "ecdsa", bits: "256")
        #expect(try agent.run(["ssh-add", first, second]).status == 0)
        // Adding a key again replaces it (here with a new comment): still one entry.
        #expect(try agent.run(["ssh-keygen", "-q", "-c", "-C", "renamed@test", "-f", first]).status == 0)
        #expect(try agent.run(["ssh-add", first]).status == 0)
        let replaced = try agent.run(["ssh-add", "-l"]).text
        #expect(replaced.split(separator: "\n").count == 2 && replaced.contains("renamed@test") && !replaced.contains("first@test"),
                "\(replaced)")
        #expect(try agent.run(["ssh-add", "-d", first + ".pub"]).status == 0)
        let listed = try agent.run(["ssh-add", "-l"]).text
        #expect(!listed.contains(try agent.fingerprint(first)))
        #expect(listed.contains(try agent.fingerprint(second)))
        #expect(try agent.run(["ssh-add", "-d", first + ".pub"]).status != 0, "a key the agent does not have")
        #expect(try agent.run(["ssh-add", "-D"]).status == 0)
        let empty = try agent.run(["ssh-add", "-l"])
        #expect(empty.status == 1)
        #expect(empty.text.contains("The agent has no identities"))
        // Gone from the keychain too: a restart does not bring them back.
        agent.daemon.stop()
        let again = try agent.fixture.start()
        try agent.waitForSocket()
        #expect(try agent.run(["ssh-add", "-l"]).status == 1)
        again.stop()
    }

    @Test("keys survive a restart of secretd, and no Secret Service client sees them (their access group)")
    func restart() throws {
        var agent = try Agent()
        let path = try agent.makeKey("kept", type: "ed25519")
        #expect(try agent.run(["ssh-add", path]).status == 0)
        try FileManager.default.removeItem(atPath: path)
        agent.daemon.stop()
        agent.daemon = try agent.fixture.start()
        try agent.waitForSocket()
        let listed = try agent.run(["ssh-add", "-l"])
        #expect(listed.text.contains(try agent.fingerprint(path)), "\(listed.text) \(agent.daemon.log)")
        let (sign, verify) = try agent.signAndVerify(path)
        #expect(sign.status == 0, "\(sign.errorOutput)")
        #expect(verify?.status == 0)
        let search = try agent.fixture.run(["secret-tool", "search", "--all", "xdg:schema", "io.github.secretd.SSHKey"])
        #expect(search.text.isEmpty, "a Secret Service client found an SSH key: \(search.text)")
        agent.daemon.stop()
    }

    @Test("while the keyring is locked the agent lists nothing, signs and adds nothing, at once; an unlock brings the keys back")
    func locked() throws {
        let agent = try Agent()
        let path = try agent.makeKey("locked", type: "ed25519")
        let other = try agent.makeKey("other", type: "ed25519")
        #expect(try agent.run(["ssh-add", path]).status == 0)
        try FileManager.default.removeItem(atPath: path)  // only the agent can sign
        try agent.lock()
        let listed = try agent.run(["ssh-add", "-l"], timeout: 10)
        #expect(listed.status == 1)
        #expect(listed.text.contains("The agent has no identities"))
        let (sign, _) = try agent.signAndVerify(path)
        #expect(sign.status != 0, "no signature while locked")
        #expect(try agent.run(["ssh-add", other], timeout: 10).status != 0, "no key added while locked")
        let ctl = try agent.fixture.run([SecretdFixture.secretctlPath, "ssh", "list"])
        #expect(ctl.status == 3 && ctl.errorOutput.contains("the login keyring is locked"), "\(ctl.errorOutput)")
        try agent.unlock()
        let back = try agent.run(["ssh-add", "-l"])
        #expect(back.status == 0)
        #expect(back.text.contains(try agent.fingerprint(path)))
        #expect(!back.text.contains(try agent.fingerprint(other)))
        #expect(try agent.signAndVerify(path).verify?.status == 0)
        agent.daemon.stop()
    }

    @Test("malformed, unknown and oversized messages get a failure and disturb no other client")
    func badMessages() throws {
        let agent = try Agent()
        let path = try agent.makeKey("good", type: "ed25519")
        #expect(try agent.run(["ssh-add", path]).status == 0)
        let results = try agent.raw([
            "open:good", "open:bad", "open:stalled",
            "send:stalled:0000001000",  // a message that never arrives whole
            "send:bad:00000000", "recv:bad",  // empty
            "send:bad:000000010d", "recv:bad",  // a sign request without its fields
            "send:bad:000000050dffffffff", "recv:bad",  // a string longer than the message
            "send:bad:00000001c8", "recv:bad",  // an unknown type
            "send:bad:000000060b0000000000", "recv:bad",  // bytes after a list request
            "send:bad:0000000a1b000000057175657279", "recv:bad",  // an extension (query), unsupported
            "send:good:000000010b", "recv:good",  // another client is served meanwhile
            "send:bad:7fffffff", "recv:bad", "recv:bad",  // oversized: a failure, then closed
            "open:after", "send:after:000000010b", "recv:after",
            "recv:stalled",  // closed once its message is 10 s late
        ])
        #expect(results == ["5", "5", "5", "5", "5", "5", "12", "5", "closed", "12", "closed"], "\(results)")
        #expect(agent.daemon.log.contains("an SSH agent client sent no complete message in 10 s; closed"))
        #expect(try agent.run(["ssh-add", "-l"]).text.contains(try agent.fingerprint(path)))
        #expect(agent.daemon.isRunning)
        agent.daemon.stop()
    }

    @Test("RSA signs rsa-sha2-256 and rsa-sha2-512 when asked, and refuses SHA-1 ssh-rsa (flags 0)")
    func rsaAlgorithms() throws {
        let agent = try Agent()
        let path = try agent.makeKey("rsa", type: "rsa", bits: "2048")
        #expect(try agent.run(["ssh-add", path]).status == 0)
        #expect(try agent.raw(["open:a", "sign:a:2", "sign:a:4", "sign:a:0"]) == ["14 rsa-sha2-256", "14 rsa-sha2-512", "5"])
        // OpenSSH 9.2's ssh-add -T (sign and verify through the agent) asks an RSA key for a
        // SHA-1 signature, so it reports the RSA key as refused; an Ed25519 key passes.
        let tested = try agent.run(["ssh-add", "-T", path + ".pub"])
        #expect(tested.status != 0 && tested.errorOutput.contains("agent refused operation"), "\(tested.errorOutput)")
        let other = try agent.makeKey("ed25519", type: "ed25519")
        #expect(try agent.run(["ssh-add", other]).status == 0)
        #expect(try agent.run(["ssh-add", "-T", other + ".pub"]).status == 0)
        agent.daemon.stop()
    }

    @Test("ssh-add -t: the key leaves the agent and the keychain when its lifetime ends; -c is refused without a pinentry")
    func constraints() throws {
        let agent = try Agent()
        let short = try agent.makeKey("short", type: "ed25519")
        let asks = try agent.makeKey("asks", type: "ed25519")
        #expect(try agent.run(["ssh-add", "-t", "2", short]).status == 0)
        #expect(try agent.run(["ssh-add", "-l"]).text.contains(try agent.fingerprint(short)))
        let confirmed = try agent.run(["ssh-add", "-c", asks])
        #expect(confirmed.status != 0, "ssh-add -c is refused")
        var gone = false
        for _ in 0..<100 where !gone {
            usleep(100_000)
            gone = try agent.run(["ssh-add", "-l"]).status == 1
        }
        #expect(gone, "the key left the agent")
        #expect(agent.daemon.logs("removed SSH key"))
        agent.daemon.stop()
    }

    @Test("secretctl ssh list, export-public and remove manage the agent's keys without SSH_AUTH_SOCK; ssh-agent env points it there")
    func secretctl() throws {
        let agent = try Agent()
        let ctl = SecretdFixture.secretctlPath
        let path = try agent.makeKey("ctl", type: "ed25519")
        let other = try agent.makeKey("other", type: "ecdsa", bits: "384")
        #expect(try agent.run(["ssh-add", path, other]).status == 0)
        let fingerprint = try agent.fingerprint(path)
        let list = try agent.fixture.run([ctl, "ssh", "list"])
        #expect(list.status == 0, "\(list.errorOutput)")
        #expect(list.text.contains("\(fingerprint) ssh-ed25519 ctl@test\n"), "\(list.text)")
        #expect(list.text.contains("\(try agent.fingerprint(other)) ecdsa-sha2-nistp384 other@test\n"))
        let json = try agent.fixture.run([ctl, "ssh", "list", "--json"])
        let decoded = try JSONSerialization.jsonObject(with: json.output) as? [[String: String]]
        #expect(decoded?.contains { $0["fingerprint"] == fingerprint && $0["comment"] == "ctl@test" && $0["type"] == "ssh-ed25519" } == true,
                "\(json.text)")
        #expect(try agent.fixture.run([ctl, "ssh", "export-public", "ctl@test"]).text == "\(try agent.publicKey(path)) ctl@test\n")
        #expect(try agent.fixture.run([ctl, "ssh", "export-public"]).text.split(separator: "\n").count == 2)
        let env = try agent.fixture.run([ctl, "ssh-agent", "env"])
        #expect(env.text == "SSH_AUTH_SOCK=\(agent.socket); export SSH_AUTH_SOCK;\n")
        #expect(try agent.fixture.run([ctl, "ssh-agent", "env", "--csh"]).text == "setenv SSH_AUTH_SOCK \(agent.socket);\n")
        // The printed lines work as ssh-agent's do.
        let shell = try agent.fixture.run(["sh", "-c", "eval \"$(\(ctl) ssh-agent env)\"; ssh-add -l"])
        #expect(shell.status == 0 && shell.text.contains(fingerprint), "\(shell.text) \(shell.errorOutput)")
        #expect(try agent.fixture.run([ctl, "ssh", "remove", "SHA256:nosuchkey"]).status == 1)
        #expect(try agent.fixture.run([ctl, "ssh", "remove"]).status == 2)
        let removed = try agent.fixture.run([ctl, "ssh", "remove", fingerprint])
        #expect(removed.status == 0, "\(removed.errorOutput)")
        let left = try agent.run(["ssh-add", "-l"]).text
        #expect(!left.contains(fingerprint) && left.contains("other@test"), "\(left)")
        agent.daemon.stop()
        #expect(try agent.fixture.run([ctl, "ssh", "list"]).status == 5, "no agent: exit status 5")
    }

    @Test("ssh-add -c: a signature asks through pinentry, naming the process; Allow once, Deny, and Allow for 10 minutes (per program, until a lock)")
    func confirm() throws {
        // Answers: Allow once; Deny; Allow for 10 minutes; (python asks) Deny; after the lock, Allow once.
        var agent = try Agent(pinentryAnswers: ["OK", "CANCEL", "NOTOK", "CANCEL", "OK"])
        let path = try agent.makeKey("asks", type: "ed25519")
        let added = try agent.run(["ssh-add", "-c", path])
        #expect(added.status == 0, "\(added.errorOutput)")
        try FileManager.default.removeItem(atPath: path)
        func dialogs() -> Int { (agent.pinentry?.log.components(separatedBy: "wants to sign").count ?? 1) - 1 }
        let once = try agent.signAndVerify(path)
        #expect(once.verify?.status == 0, "\(once.sign.errorOutput)")
        let log = agent.pinentry?.log ?? ""
        #expect(log.contains("exe:/usr/bin/ssh-keygen (pid "), "the dialog names the process that asked: \(log)")
        #expect(log.contains("asks@test"))
        #expect(try agent.signAndVerify(path).sign.status != 0, "Deny: no signature")
        #expect(try agent.signAndVerify(path).verify?.status == 0, "Allow for 10 minutes")
        #expect(try agent.signAndVerify(path).verify?.status == 0, "and again, without asking")
        #expect(dialogs() == 3)
        // Another program is asked (and denied here).
        #expect(try agent.raw(["open:a", "sign:a:0"]) == ["5"])
        #expect(dialogs() == 4)
        // A lock forgets the permission; the key is there again after the unlock, and asks.
        try agent.lock()
        try agent.unlock()
        #expect(try agent.signAndVerify(path).verify?.status == 0)
        #expect(dialogs() == 5)
        // The mark survives a restart.
        agent.daemon.stop()
        agent.daemon = try agent.fixture.start()
        try agent.waitForSocket()
        try agent.pinentry?.setAnswers(["CANCEL"])
        #expect(try agent.signAndVerify(path).sign.status != 0)
        #expect(dialogs() == 6)
        agent.daemon.stop()
    }

    @Test("ssh logs in to a real sshd on localhost with each key type from the agent; not while the keyring is locked",
          .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd"),
                   "needs root and openssh-server, which is not in DEB_TEST: installing it starts an SSH server on the machine"))
    func sshLogin() throws {
        let agent = try Agent()
        let server = agent.fixture.root.appendingPathComponent("sshd")
        try FileManager.default.createDirectory(at: server, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // sshd's privilege separation directory, as the openssh-server unit makes it.
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let hostKey = server.appendingPathComponent("host_ed25519").path
        #expect(try agent.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey]).status == 0)
        var authorized = ""
        var paths: [String] = []
        for key in Self.keyTypes where key.name != "ecdsa384" {
            let path = try agent.makeKey(key.name, type: key.type, bits: key.bits)
            #expect(try agent.run(["ssh-add", path]).status == 0)
            authorized += try agent.publicKey(path) + "\n"
            paths.append(path)
            try FileManager.default.removeItem(atPath: path)
        }
        let authorizedKeys = server.appendingPathComponent("authorized_keys").path
        try authorized.write(toFile: authorizedKeys, atomically: true, encoding: .utf8)
        let user = String(cString: getpwuid(getuid()).pointee.pw_name)

        // A port of its own: sshd exits at once when it cannot bind, and another is tried.
        var sshd: SupervisedProcess?
        var port = 0
        for attempt in 0..<10 where sshd == nil {
            port = 20000 + Int.random(in: 0..<30000)
            let config = server.appendingPathComponent("sshd_config-\(attempt)").path
            try """
                Port \(port)
                ListenAddress 127.0.0.1
                HostKey \(hostKey)
                PidFile none
                AuthorizedKeysFile \(authorizedKeys)
                StrictModes no
                UsePAM no
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                PubkeyAuthentication yes
                PermitRootLogin prohibit-password

                """.write(toFile: config, atomically: true, encoding: .utf8)
            let started = try SupervisedProcess(
                ["/usr/sbin/sshd", "-D", "-e", "-f", config], environment: agent.fixture.environment,
                logURL: server.appendingPathComponent("sshd-\(attempt).log"))
            var listening = false
            for _ in 0..<100 where started.isRunning && !listening {
                usleep(50_000)
                listening = started.log.contains("Server listening")
            }
            if listening { sshd = started } else { started.stop() }
        }
        let daemon = try #require(sshd, "sshd did not start")
        defer { daemon.stop() }
        func ssh(_ keyPath: String) throws -> CommandResult {
            try agent.run([
                "ssh", "-F", "/dev/null", "-p", String(port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=\(server.path)/known_hosts", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=\(keyPath).pub",
                "\(user)@127.0.0.1", "echo", "logged-in",
            ], timeout: 30)
        }
        for path in paths {
            let result = try ssh(path)
            #expect(result.status == 0 && result.text == "logged-in\n", "\(path): \(result.errorOutput) \(daemon.log)")
        }
        // ssh asked the agent to bind the connection to the host (session-bind@openssh.com),
        // was refused, and logged in all the same.
        #expect(agent.daemon.log.contains("session-bind@openssh.com is not supported"), "\(agent.daemon.log)")
        try agent.lock()
        let refused = try ssh(paths[0])
        #expect(refused.status == 255 && refused.errorOutput.contains("Permission denied"), "\(refused.errorOutput)")
        try agent.unlock()
        #expect(try ssh(paths[0]).text == "logged-in\n")
        agent.daemon.stop()
    }

    @Test("git signs a commit with the agent's key (gpg.format=ssh) and verifies it")
    func gitCommitSigning() throws {
        let agent = try Agent()
        let path = try agent.makeKey("git", type: "ed25519")
        #expect(try agent.run(["ssh-add", path]).status == 0)
        try FileManager.default.removeItem(atPath: path)
        let repository = agent.fixture.root.appendingPathComponent("repository").path
        let signers = agent.keys.appendingPathComponent("git_allowed_signers").path
        try "alice@example.com \(try agent.publicKey(path))\n".write(toFile: signers, atomically: true, encoding: .utf8)
        func git(_ arguments: [String]) throws -> CommandResult { try agent.run(["git", "-C", repository] + arguments) }
        #expect(try agent.run(["git", "init", "-q", repository]).status == 0)
        for (name, value) in [
            ("user.name", "Alice"), ("user.email", "alice@example.com"), ("gpg.format", "ssh"), ("user.signingkey", path + ".pub"),
            ("gpg.ssh.allowedSignersFile", signers),
        ] {
            #expect(try git(["config", name, value]).status == 0)
        }
        let commit = try git(["commit", "-q", "-S", "--allow-empty", "-m", "signed by the agent"])
        #expect(commit.status == 0, "\(commit.errorOutput)")
        let verified = try git(["verify-commit", "HEAD"])
        #expect(verified.status == 0, "\(verified.errorOutput)")
        #expect(verified.errorOutput.contains("Good \"git\" signature for alice@example.com"), "\(verified.errorOutput)")
        agent.daemon.stop()
    }

    @Test("started by its sockets as secretd.socket starts it: the first ssh-add starts secretd, which serves the agent and login sockets it was given")
    func socketActivation() throws {
        let agent = try Agent(socketActivated: true)
        let path = try agent.makeKey("activated", type: "ed25519")
        let added = try agent.run(["ssh-add", path])
        #expect(added.status == 0, "\(added.errorOutput) \(agent.daemon.log)")
        #expect(try agent.run(["ssh-add", "-l"]).text.contains(try agent.fingerprint(path)))
        // The login socket it was given answers too (a ping: 0).
        let ping = """
            import socket, struct, sys
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(20)
            s.connect(sys.argv[1])
            s.sendall(struct.pack(">II", 8, 3))
            reply = s.recv(16)
            print(struct.unpack(">II", reply)[1] if len(reply) == 8 else "none")
            """
        let control = agent.fixture.root.appendingPathComponent("run/secretd/control").path
        #expect(try agent.fixture.runPython(ping, named: "ping.py", [control]).text == "0\n")
        agent.daemon.stop()
        // The sockets are systemd's (here systemd-socket-activate's): secretd leaves them in place.
        #expect(FileManager.default.fileExists(atPath: agent.socket))
    }

    @Test("out of file descriptors, the agent stops accepting for a second and serves again once some are free")
    func descriptorsUsedUp() throws {
        let fixture = try SecretdFixture()
        let daemon = try SupervisedProcess(
            ["/bin/sh", "-c", "ulimit -n 64; exec \"$0\" \"$@\"", SecretdFixture.secretdPath, "--foreground", "--data-dir",
             fixture.dataDirectory.path, "--config-dir", fixture.configDirectory.path, "--unlock"],
            environment: fixture.environment, standardInput: Data("login-password".utf8),
            logURL: fixture.root.appendingPathComponent("secretd-few-files.log"))
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon)
        let socket = fixture.root.appendingPathComponent("run/secretd/ssh-agent").path
        let client = """
            import socket, struct, sys, time
            held = []
            for _ in range(63):
                s = socket.socket(socket.AF_UNIX)
                s.connect(sys.argv[1])
                held.append(s)
            time.sleep(1)
            for s in held:
                s.close()
            for attempt in range(50):
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(2)
                s.connect(sys.argv[1])
                s.sendall(struct.pack(">IB", 1, 11))
                try:
                    reply = s.recv(5)
                    if len(reply) == 5:
                        print(reply[4])
                        break
                except OSError:
                    pass
                s.close()
                time.sleep(0.2)
            """
        let result = try fixture.runPython(client, named: "many.py", [socket])
        #expect(result.text == "12\n", "\(result.text) \(result.errorOutput)")
        #expect(daemon.log.contains("no file descriptor left"), "\(daemon.log)")
        #expect(daemon.isRunning)
        daemon.stop()
    }

    @Test("a certificate added with its key is listed and signs with it (ssh-keygen -Y with the certificate, verified against its CA)")
    func certificate() throws {
        let agent = try Agent()
        let ca = try agent.makeKey("ca", type: "ed25519")
        for key in Self.keyTypes where ["ed25519", "ecdsa256", "rsa"].contains(key.name) {
            let path = try agent.makeKey(key.name, type: key.type, bits: key.bits)
            let signed = try agent.run(["ssh-keygen", "-q", "-s", ca, "-I", "test-cert", "-n", "signer@test", path + ".pub"])
            #expect(signed.status == 0, "\(signed.errorOutput)")
            let added = try agent.run(["ssh-add", path])
            #expect(added.status == 0 && added.errorOutput.contains("Certificate added"), "\(key.name): \(added.errorOutput) \(agent.daemon.log)")
            try FileManager.default.removeItem(atPath: path)
            let certificate = try String(contentsOfFile: path + "-cert.pub", encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
            #expect(try agent.run(["ssh-add", "-L"]).text.contains(certificate), "\(key.name): the certificate is listed")
            // Signed with the certificate, verified through the CA that issued it.
            let file = agent.keys.appendingPathComponent("signed-\(key.name)").path
            try "certified\n".write(toFile: file, atomically: true, encoding: .utf8)
            let sign = try agent.run(["ssh-keygen", "-Y", "sign", "-f", path + "-cert.pub", "-n", "git", file])
            #expect(sign.status == 0, "\(key.name): \(sign.errorOutput)")
            let signers = agent.keys.appendingPathComponent("ca_signers").path
            try "signer@test cert-authority \(try agent.publicKey(ca))\n".write(toFile: signers, atomically: true, encoding: .utf8)
            let verify = try agent.run(
                ["ssh-keygen", "-Y", "verify", "-f", signers, "-I", "signer@test", "-n", "git", "-s", file + ".sig"], input: "certified\n")
            #expect(verify.status == 0, "\(key.name): \(verify.errorOutput) \(verify.text)")
        }
        // Key and certificate are two entries with one fingerprint; both survive a restart.
        let listed = try agent.run(["ssh-add", "-l"]).text.split(separator: "\n")
        #expect(listed.count == 6, "\(listed)")
        #expect(try agent.fixture.run([SecretdFixture.secretctlPath, "ssh", "list"]).text.split(separator: "\n").count == 6)
        #expect(Set(listed.map { $0.split(separator: " ")[1] }).count == 3)
        agent.daemon.stop()
    }
}

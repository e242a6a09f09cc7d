import Foundation
import KeychainTestSupport
import Testing

/// Keys confined to an access group (`secretctl ssh confine`), and what a forwarded agent asks
/// of the agent (`ssh-add -h`, `session-bind@openssh.com`), with OpenSSH's own clients. Copies
/// of `ssh-add` and `ssh-keygen` under the test's directory are the group's members (`exe:`
/// identities); the installed ones are not.
extension SSHAgentTests {
    /// The group the tests confine keys to.
    static let workGroup = "com.example.work"

    /// Copies of `ssh-add` and `ssh-keygen` in `agent`'s directory, as `/proc/PID/exe` names them.
    struct MemberTools {
        let sshAdd: String
        let sshKeygen: String

        init(in agent: Agent) throws {
            let bin = agent.fixture.root.appendingPathComponent("member-bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            let real = URL(fileURLWithPath: bin.resolvingSymlinksInPath().path)
            sshAdd = real.appendingPathComponent("ssh-add").path
            sshKeygen = real.appendingPathComponent("ssh-keygen").path
            try ExecutableFile.copy("/usr/bin/ssh-add", to: sshAdd)
            try ExecutableFile.copy("/usr/bin/ssh-keygen", to: sshKeygen)
        }

        /// access-groups.conf with the copies as the members of ``SSHAgentTests/workGroup``.
        var policy: String { "[group \"\(SSHAgentTests.workGroup)\"]\nmember = exe:\(sshAdd)\nmember = exe:\(sshKeygen)\n" }
    }

    /// Writes access-groups.conf (0600) and has secretd read it again (SIGHUP).
    func apply(policy text: String, to agent: Agent) throws {
        let file = agent.fixture.configDirectory.appendingPathComponent("access-groups.conf")
        try text.write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o600)
        let before = agent.daemon.log.components(separatedBy: "loaded access-groups.conf").count
        kill(try #require(agent.daemon.helperPID), SIGHUP)
        for _ in 0..<100 where agent.daemon.log.components(separatedBy: "loaded access-groups.conf").count == before { usleep(50_000) }
        #expect(agent.daemon.log.components(separatedBy: "loaded access-groups.conf").count > before, "\(agent.daemon.log)")
    }

    @Test("a key confined to an access group is listed to and signs for its members only; a non-member is refused at once, in the log and the audit trail")
    func confinedKey() throws {
        var agent = try Agent()
        let members = try MemberTools(in: agent)
        try apply(policy: members.policy, to: agent)
        let ctl = SecretdFixture.secretctlPath
        let work = try agent.makeKey("work", type: "ed25519")
        let personal = try agent.makeKey("personal", type: "ecdsa", bits: "256")
        #expect(try agent.run(["ssh-add", work, personal]).status == 0)
        try FileManager.default.removeItem(atPath: work)
        let workPrint = try agent.fingerprint(work)
        let personalPrint = try agent.fingerprint(personal)

        // Confining: to an undefined group refused, with why; to the work group done.
        let undefined = try agent.fixture.run([ctl, "ssh", "confine", "work@test", "com.example.nosuch"])
        #expect(undefined.status == 4 && undefined.errorOutput.contains("defines no group “com.example.nosuch”"), "\(undefined.errorOutput)")
        let confined = try agent.fixture.run([ctl, "ssh", "confine", "work@test", Self.workGroup])
        #expect(confined.status == 0, "\(confined.errorOutput) \(agent.daemon.log)")
        // secretctl ssh lists every key, each confined one with its group.
        let listed = try agent.fixture.run([ctl, "ssh", "list"]).text
        #expect(listed.contains("\(workPrint) ssh-ed25519 work@test (confined to \(Self.workGroup))\n"), "\(listed)")
        #expect(listed.contains("\(personalPrint) ecdsa-sha2-nistp256 personal@test\n"), "\(listed)")
        let json = try JSONSerialization.jsonObject(with: try agent.fixture.run([ctl, "ssh", "list", "--json"]).output) as? [[String: String]]
        #expect(json?.first { $0["fingerprint"] == workPrint }?["group"] == Self.workGroup, "\(json ?? [])")
        #expect(json?.first { $0["fingerprint"] == personalPrint }?["group"] == nil)
        let remove = try agent.fixture.run([ctl, "ssh", "remove", workPrint])
        #expect(remove.status == 6 && remove.errorOutput.contains("only its members may remove it"), "\(remove.errorOutput)")

        // A non-member (the installed ssh-add, ssh-keygen) does not see it and cannot sign with it.
        let outsider = try agent.run(["ssh-add", "-l"]).text
        #expect(!outsider.contains(workPrint) && outsider.contains(personalPrint), "\(outsider)")
        #expect(!(try agent.run(["ssh-add", "-L"]).text.contains("work@test")))
        let (refused, _) = try agent.signAndVerify(work)
        #expect(refused.status != 0, "a non-member signed with a confined key")
        // A client that asks for it anyway (by its public blob) gets the failure at once.
        let blob = try #require(Data(base64Encoded: String(try agent.publicKey(work).split(separator: " ")[1])))
        let started = Date()
        #expect(try agent.raw(["open:a", "signblob:a:" + blob.map { String(format: "%02x", $0) }.joined()]) == ["5"])
        #expect(Date().timeIntervalSince(started) < 5, "refused at once")
        let python = "exe:" + URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path
        #expect(agent.daemon.logs("(\(workPrint)) for \(python) (pid "), "\(agent.daemon.log)")
        #expect(agent.daemon.log.contains("\(python) is not a member of the access group “\(Self.workGroup)”"))
        // The personal key still signs for everyone.
        #expect(try agent.signAndVerify(personal).verify?.status == 0)

        // A member sees both and signs with the confined key; the signature verifies.
        let member = try agent.run([members.sshAdd, "-l"]).text
        #expect(member.contains(workPrint) && member.contains(personalPrint), "\(member)")
        let message = agent.keys.appendingPathComponent("member-message").path
        try "signed by a member\n".write(toFile: message, atomically: true, encoding: .utf8)
        let signed = try agent.run([members.sshKeygen, "-Y", "sign", "-f", work + ".pub", "-n", "git", message])
        #expect(signed.status == 0, "\(signed.errorOutput) \(agent.daemon.log)")
        let signers = agent.keys.appendingPathComponent("allowed_signers").path
        try "signer@test \(try agent.publicKey(work))\n".write(toFile: signers, atomically: true, encoding: .utf8)
        let verified = try agent.run(
            ["ssh-keygen", "-Y", "verify", "-f", signers, "-I", "signer@test", "-n", "git", "-s", message + ".sig"],
            input: "signed by a member\n")
        #expect(verified.status == 0, "\(verified.errorOutput)")

        // The refusal is in the audit trail, under the non-member's identity, naming the key.
        let audit = try agent.fixture.run([ctl, "audit", "--json"])
        let entries = try #require(try JSONSerialization.jsonObject(with: audit.output) as? [String: Any])["entries"] as? [[String: Any]]
        let refusal = entries?.first { $0["event"] as? String == "refused" && ($0["detail"] as? String)?.hasPrefix("ssh-agent sign:") == true }
        #expect(refusal?["identity"] as? String == python, "\(entries ?? [])")
        #expect((refusal?["detail"] as? String)?.contains("not a member of the access group “\(Self.workGroup)”") == true)

        // A non-member's ssh-add -D leaves the key it does not see; the confinement survives a restart.
        #expect(try agent.run(["ssh-add", "-D"]).status == 0)
        agent.daemon.stop()
        agent.daemon = try agent.fixture.start()
        try agent.waitForSocket()
        #expect(try agent.run([members.sshAdd, "-l"]).text.contains(workPrint))
        #expect(try agent.run(["ssh-add", "-l"]).status == 1, "a non-member still sees nothing")

        // The group leaves access-groups.conf: nobody may use the key (fail closed).
        try apply(policy: "# no groups\n", to: agent)
        #expect(!(try agent.run([members.sshAdd, "-l"]).text.contains(workPrint)))
        #expect(try agent.run([members.sshKeygen, "-Y", "sign", "-f", work + ".pub", "-n", "git", message]).status != 0)

        // Unconfining needs the login password: refused without it and with a wrong one.
        let bare = try agent.fixture.run([ctl, "ssh", "unconfine", workPrint])
        #expect(bare.status == 4 && bare.errorOutput.contains("needs the login password"), "\(bare.errorOutput)")
        let wrong = try agent.fixture.run([ctl, "ssh", "unconfine", "--password-stdin", workPrint], input: "not-the-password")
        #expect(wrong.status == 4 && wrong.errorOutput.contains("the password is wrong"), "\(wrong.errorOutput)")
        usleep(1_200_000)  // the wait after a wrong password
        let unconfined = try agent.fixture.run([ctl, "ssh", "unconfine", "--password-stdin", workPrint], input: "login-password")
        #expect(unconfined.status == 0, "\(unconfined.errorOutput)")
        #expect(try agent.run(["ssh-add", "-l"]).text.contains(workPrint))
        #expect(try agent.signAndVerify(work).verify?.status == 0, "an unconfined key signs for everyone again")
        #expect(try agent.fixture.run([ctl, "ssh", "unconfine", "SHA256:nosuchkey"]).status == 1)
        agent.daemon.stop()
    }

    @Test("ssh-add -h (a key restricted to destinations) is refused: ssh-add reports the agent's refusal, the log says why and what to do")
    func destinationConstraint() throws {
        let agent = try Agent()
        let path = try agent.makeKey("restricted", type: "ed25519")
        // ssh-add -h looks the destination's host key up in known_hosts (-H names the file).
        let hostKey = try agent.makeKey("host", type: "ed25519")
        let knownHosts = agent.keys.appendingPathComponent("known_hosts").path
        try "server.example \(try agent.publicKey(hostKey))\n".write(toFile: knownHosts, atomically: true, encoding: .utf8)
        let started = Date()
        let added = try agent.run(["ssh-add", "-H", knownHosts, "-h", "server.example", path], timeout: 10)
        #expect(added.status == 1, "\(added.errorOutput)")
        #expect(added.errorOutput.contains("Could not add identity \"\(path)\": agent refused operation"), "\(added.errorOutput)")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(agent.daemon.logs("a key restricted to destinations (ssh-add -h) was not added"), "\(agent.daemon.log)")
        #expect(agent.daemon.log.contains("add it without -h"))
        #expect(try agent.run(["ssh-add", "-l"]).status == 1, "the key was not kept without its restriction")
        // The same key without -h is added.
        #expect(try agent.run(["ssh-add", path]).status == 0)
        agent.daemon.stop()
    }

    @Test("session-bind@openssh.com gets the agent's failure at once, is logged, and the connection serves on")
    func sessionBind() throws {
        let agent = try Agent()
        let path = try agent.makeKey("bound", type: "ed25519")
        #expect(try agent.run(["ssh-add", path]).status == 0)
        // As ssh sends it: the host key, the session id, the host's signature of it, and
        // whether the connection is forwarded.
        func string(_ bytes: [UInt8]) -> [UInt8] { withUnsafeBytes(of: UInt32(bytes.count).bigEndian, Array.init) + bytes }
        let hostKey = Array(try #require(Data(base64Encoded: String(try agent.publicKey(path).split(separator: " ")[1]))))
        let body = [UInt8(27)] + string(Array("session-bind@openssh.com".utf8)) + string(hostKey) + string([UInt8](repeating: 7, count: 32))
            + string(string(Array("ssh-ed25519".utf8)) + string([UInt8](repeating: 1, count: 64))) + [1]
        let message = string(body).map { String(format: "%02x", $0) }.joined()
        let replies = try agent.raw(["open:a", "send:a:" + message, "recv:a", "send:a:000000010b", "recv:a"])
        #expect(replies == ["5", "12"], "\(replies)")
        #expect(agent.daemon.logs("session-bind@openssh.com is not supported"), "\(agent.daemon.log)")
        agent.daemon.stop()
    }

    @Test("a secretctl run gets only the SSH keys confined to its group: none without --group, and a signature with another is refused")
    func keysInRun() throws {
        var agent = try Agent()
        try apply(policy: "[group \"\(Self.workGroup)\"]\n", to: agent)
        let ctl = SecretdFixture.secretctlPath
        let work = try agent.makeKey("work", type: "ed25519")
        let personal = try agent.makeKey("personal", type: "ed25519")
        #expect(try agent.run(["ssh-add", work, personal]).status == 0)
        // Only the agent can sign now (ssh-keygen -Y sign would fall back to a key file).
        try FileManager.default.removeItem(atPath: work)
        try FileManager.default.removeItem(atPath: personal)
        #expect(try agent.fixture.run([ctl, "ssh", "confine", "work@test", Self.workGroup]).status == 0)
        let message = agent.fixture.root.appendingPathComponent("message").path
        try "signed in a run".write(toFile: message, atomically: true, encoding: .utf8)

        let bare = try agent.run([ctl, "run", "--name", "bare", "--", "ssh-add", "-l"])
        #expect(bare.status == 1 && !bare.text.contains("@test"), "\(bare.text) \(bare.errorOutput)")
        let grouped = try agent.run([ctl, "run", "--group", Self.workGroup, "--", "ssh-add", "-l"])
        #expect(grouped.text.contains("work@test") && !grouped.text.contains("personal@test"), "\(grouped.text) \(grouped.errorOutput)")
        #expect(try agent.run([ctl, "run", "--group", Self.workGroup, "--", "ssh-keygen", "-Y", "sign", "-f", work + ".pub", "-n", "git", message]).status == 0)
        #expect(try agent.run([ctl, "run", "--name", "bare", "--", "ssh-keygen", "-Y", "sign", "-f", personal + ".pub", "-n", "git", message]).status != 0)
        // Outside a run, the unconfined key works as before.
        #expect(try agent.run(["ssh-keygen", "-Y", "sign", "-f", personal + ".pub", "-n", "git", message]).status == 0)
        agent.daemon.stop()
    }
}

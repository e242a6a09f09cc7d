import Foundation
import KeychainCore
import KeychainTestSupport
import SecretService
import Testing

/// secretd's side of the login control protocol (Sources/CLoginControl/login-control.h), spoken
/// by a Python client on the socket as pam_secretd.so speaks it; PAMModuleTests drive the real
/// module. Results: 0 ok, 1 denied, 2 failed; "none" when secretd closed without a reply.
@Suite struct LoginControlTests {
    static let login = "/org/freedesktop/secrets/collection/login"
    static let service = "/org/freedesktop/secrets"

    /// The client: each argument is one request, `OP[:STRING[:STRING]]` (strings in hex), or
    /// `raw:HEX` for bytes sent as they are; prints one result per request.
    static let client = """
        import socket, struct, sys
        path = sys.argv[1]
        for request in sys.argv[2:]:
            parts = request.split(":")
            if parts[0] == "raw":
                frame = bytes.fromhex(parts[1])
            else:
                strings = [bytes.fromhex(p) for p in parts[1:]]
                body = b"".join(struct.pack(">I", len(s)) + s for s in strings)
                frame = struct.pack(">II", 8 + len(body), int(parts[0])) + body
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(path)
            s.sendall(frame)
            s.shutdown(socket.SHUT_WR)
            reply = s.recv(16)
            s.close()
            print(struct.unpack(">II", reply)[1] if len(reply) == 8 else "none")
        """

    private static func hex(_ text: String) -> String { Data(text.utf8).map { String(format: "%02x", $0) }.joined() }
    static func unlock(_ password: String) -> String { "1:" + hex(password) }
    static func change(_ old: String, _ new: String) -> String { "2:" + hex(old) + ":" + hex(new) }

    /// The results of `requests`, one connection each.
    static func send(_ fixture: SecretdFixture, _ requests: [String]) throws -> [String] {
        let socket = fixture.root.appendingPathComponent("run/secretd/control").path
        let result = try fixture.runPython(client, named: "login-control.py", [socket] + requests)
        guard result.status == 0 else { throw HarnessError("the client failed: \(result.errorOutput)") }
        return result.text.split(separator: "\n").map(String.init)
    }

    static func isLocked(_ fixture: SecretdFixture) throws -> Bool {
        try fixture.call(login, "org.freedesktop.DBus.Properties", "Get", "('org.freedesktop.Secret.Collection', 'Locked')")
            == "(<true>,)"
    }

    static func lock(_ fixture: SecretdFixture) throws {
        _ = try fixture.call(service, "org.freedesktop.Secret.Service", "Lock", "([objectpath '\(login)'],)")
    }

    @Test("the first login password creates the login keyring (with the default alias); later ones unlock it")
    func createThenUnlock() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start([], input: nil)
        let socket = fixture.root.appendingPathComponent("run/secretd/control").path
        let attributes = try FileManager.default.attributesOfItem(atPath: socket)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let directory = try FileManager.default.attributesOfItem(atPath: fixture.root.appendingPathComponent("run/secretd").path)
        #expect((directory[.posixPermissions] as? Int) == 0o700)
        #expect(try Self.send(fixture, ["3", Self.unlock("first-password")]) == ["0", "0"])
        #expect(try !Self.isLocked(fixture))
        #expect(try fixture.call(Self.service, "org.freedesktop.Secret.Service", "ReadAlias", "('default',)")
                == "(objectpath '\(Self.login)',)")
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "k", "v"], input: "s3").status == 0)
        try Self.lock(fixture)
        #expect(try Self.isLocked(fixture))
        #expect(try Self.send(fixture, [Self.unlock("first-password")]) == ["0"])
        #expect(try fixture.run(["secret-tool", "lookup", "k", "v"]).text == "s3")
        // Unlocked already: nothing to do, whatever the password.
        #expect(try Self.send(fixture, [Self.unlock("first-password")]) == ["0"])
        daemon.stop()
        #expect(!FileManager.default.fileExists(atPath: socket), "a clean stop removes the socket secretd bound")
    }

    @Test("a password change re-wraps the login keyring: with the old password; without it (root), at once or at the next unlock",
          .enabled(if: getuid() == 0, "root's requests: the client's real uid must be 0"))
    func change() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()  // login keyring "login-password", unlocked
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "k", "v"], input: "s3").status == 0)
        #expect(try Self.send(fixture, [Self.change("login-password", "second")]) == ["0"])
        #expect(try !Self.isLocked(fixture), "a change does not lock or unlock")
        // Root set the password (no old one) while the keyring is unlocked: re-wrapped.
        #expect(try Self.send(fixture, [Self.change("", "third")]) == ["0"])
        try Self.lock(fixture)
        // ...and while it is locked: it still opens with its password, and takes root's then.
        #expect(try Self.send(fixture, [Self.change("", "fourth")]) == ["0"])
        #expect(try Self.send(fixture, [Self.unlock("third")]) == ["0"])
        #expect(try fixture.run(["secret-tool", "lookup", "k", "v"]).text == "s3")
        #expect(daemon.logs("the login keyring now opens with the login password root set"), "\(daemon.log)")
        // An empty new password is refused.
        #expect(try Self.send(fixture, [Self.change("fourth", "")]) == ["2"])
        // A wrong old password changes nothing (and starts the wait before the next attempt).
        #expect(try Self.send(fixture, [Self.change("wrong", "fifth")]) == ["1"])
        daemon.stop()
        let again = try fixture.start(["--unlock"], input: "fourth")
        #expect(try !Self.isLocked(fixture), "the keyring opens with the last password it was given")
        again.stop()
    }

    @Test("a wrong or empty login password leaves the keyring locked")
    func wrongPassword() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        try Self.lock(fixture)
        #expect(try Self.send(fixture, [Self.unlock("wrong"), Self.unlock("")]) == ["1", "2"])
        #expect(try Self.isLocked(fixture))
        // The login's wrong password (root's PAM stack, as this client is when the tests run as
        // root) neither waits nor counts: the user's own unlock right after it is not made to
        // wait, and neither is the next login.
        let secretctl = SecretdFixture.secretctlPath
        let unlocked = try fixture.run([secretctl, "unlock", "--password-stdin"], input: "login-password")
        #expect(unlocked.status == 0, "\(unlocked.errorOutput)")
        #expect(try !Self.isLocked(fixture))
        try Self.lock(fixture)
        if getuid() == 0 {
            #expect(try Self.send(fixture, [Self.unlock("wrong"), Self.unlock("login-password")]) == ["1", "0"])
            #expect(try !Self.isLocked(fixture))
        }
        daemon.stop()
    }

    @Test("malformed requests get FAILED or no reply, and secretd goes on serving")
    func malformed() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        let requests = [
            "9",  // unknown operation
            "1",  // UNLOCK without its password
            "3:00",  // PING with a string
            "raw:7fffffff00000001",  // a 2 GiB frame announced
            "raw:0000000400000001",  // a frame shorter than its header
            "raw:00000010000000010000ffff61616161",  // a string running past the frame
            "raw:000000",  // cut short, then closed: no reply
        ]
        #expect(try Self.send(fixture, requests) == ["2", "2", "2", "2", "2", "2", "none"])
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "k", "v"], input: "s3").status == 0)
        #expect(try Self.send(fixture, ["3"]) == ["0"])
        daemon.stop()
    }

    @Test("the protocol's password limit is the one secretd and secretctl read passwords with")
    func passwordLimit() {
        #expect(LoginControlRequest.maximumPasswordLength == KeychainLimits.passwordSize)
    }

    @Test("12 idle connections at once (8 served, the rest closed) leave secretd idle, and it serves again once they go")
    func connectionLimit() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        let pid = try #require(daemon.helperPID)
        let socket = fixture.root.appendingPathComponent("run/secretd/control").path
        // Prints secretd's CPU seconds while 12 connections stay open 3 s without a request, then
        // the answer to a PING once they are closed (asked until a slot is free again).
        let script = """
            import os, socket, struct, sys, time
            def cpu():
                fields = open("/proc/%s/stat" % sys.argv[2]).read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            def connect():
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(10)
                s.connect(sys.argv[1])
                return s
            held = [connect() for _ in range(12)]
            before = cpu()
            time.sleep(3)
            print("cpu %.2f" % (cpu() - before))
            for s in held:
                s.close()
            reply = b""
            for _ in range(100):
                # Until secretd has seen the held ones go, a new connection may be closed as the
                # rest were: at once (a reset or a broken pipe), then asked again.
                again = connect()
                try:
                    again.sendall(struct.pack(">II", 8, 3))
                    reply = again.recv(16)
                except (ConnectionResetError, BrokenPipeError):
                    reply = b""
                again.close()
                if reply:
                    break
                time.sleep(0.1)
            print("again", struct.unpack(">II", reply)[1] if reply else "none")
            """
        let result = try fixture.runPython(script, named: "login-control-limit.py", [socket, String(pid)])
        let lines = result.text.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(result.text)\(result.errorOutput)")
        // A listener left readable by connections it does not accept spins the main loop: a core's
        // worth, about 3 s here. Idle, secretd uses next to nothing.
        let cpu = Double(lines.first?.dropFirst(4) ?? "") ?? .infinity
        #expect(cpu < 1.0, "secretd used \(cpu) s of CPU with its connection slots full")
        #expect(lines.last == "again 0")
        daemon.stop()
    }
}

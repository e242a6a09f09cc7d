import Foundation
import KeychainTestSupport
import Testing

/// Prompts through pinentry, with a scripted stand-in that speaks the Assuan protocol (the only
/// part of the system the tests stand in for: the person).
@Suite struct PromptTests {
    /// A fixture whose secretd uses the stand-in, answering with `answers` in order.
    func fixture(answers: [String]) throws -> (SecretdFixture, URL) {
        let fixture = try SecretdFixture()
        let pinentry = try ScriptedPinentry(in: fixture.root, answers: answers)
        fixture.environment.merge(pinentry.environment) { $1 }
        try fixture.writeConfiguration("pinentry = \(pinentry.program.path)\n")
        return (fixture, pinentry.answers)
    }

    func lockLogin(_ fixture: SecretdFixture) throws {
        _ = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Lock",
                             "([objectpath '/org/freedesktop/secrets/collection/login'],)")
    }

    @Test("a locked keyring is unlocked through pinentry; a wrong password is asked again with an error")
    func unlockThroughPinentry() throws {
        let (fixture, answers) = try fixture(answers: ["wrong password", "login-password"])
        let daemon = try fixture.start()
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "service", "s", "account", "a"], input: "v1").status == 0)
        try lockLogin(fixture)
        // secret-tool asks to unlock, libsecret runs the prompt, secretd asks pinentry.
        let lookup = try fixture.run(["secret-tool", "lookup", "service", "s", "account", "a"])
        #expect(lookup.status == 0, "\(lookup.errorOutput) \(daemon.log)")
        #expect(lookup.text == "v1")
        let log = try String(contentsOfFile: answers.path + ".log", encoding: .utf8)
        #expect(log.components(separatedBy: "GETPIN").count == 3)
        #expect(log.contains("SETERROR the password is wrong"))
        #expect(log.contains("SETDESC An application wants access to the keyring “Login”"))
        daemon.stop()
    }

    @Test("cancelling the pinentry dismisses the prompt: the client fails at once, the keyring stays locked")
    func cancel() throws {
        let (fixture, _) = try fixture(answers: ["CANCEL"])
        let daemon = try fixture.start()
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "service", "s", "account", "a"], input: "v1").status == 0)
        try lockLogin(fixture)
        let lookup = try fixture.run(["secret-tool", "lookup", "service", "s", "account", "a"])
        #expect(lookup.status == 1)
        #expect(lookup.text.isEmpty)
        #expect(try fixture.call("/org/freedesktop/secrets/collection/login", "org.freedesktop.DBus.Properties", "Get",
                                 "('org.freedesktop.Secret.Collection', 'Locked')") == "(<true>,)")
        daemon.stop()
    }

    @Test("a pinentry that cannot start dismisses the prompt and says why in the log")
    func missingPinentry() throws {
        let fixture = try SecretdFixture()
        try fixture.writeConfiguration("pinentry = /nonexistent/pinentry\n")
        let daemon = try fixture.start()
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "service", "s", "account", "a"], input: "v1").status == 0)
        try lockLogin(fixture)
        #expect(try fixture.run(["secret-tool", "lookup", "service", "s", "account", "a"]).status == 1)
        #expect(daemon.log.contains("cannot ask for a password"))
        daemon.stop()
    }

    @Test("CreateCollection asks for the new keyring's password and creates it")
    func createCollection() throws {
        let (fixture, answers) = try fixture(answers: ["work-password"])
        let daemon = try fixture.start()
        let reply = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "CreateCollection",
                                     "({'org.freedesktop.Secret.Collection.Label': <'Work'>}, '')")
        let prompt = try #require(reply.components(separatedBy: "objectpath '").last?.split(separator: "'").first.map(String.init))
        #expect(prompt.hasPrefix("/org/freedesktop/secrets/prompt/"))
        _ = try fixture.call(prompt, "org.freedesktop.Secret.Prompt", "Prompt", "('',)")
        var collections = ""
        for _ in 0..<600 {  // up to 30 s: tests of other suites may load both cores
            collections = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.DBus.Properties", "Get",
                                           "('org.freedesktop.Secret.Service', 'Collections')")
            if collections.contains("/org/freedesktop/secrets/collection/work") { break }
            usleep(50_000)
        }
        #expect(collections.contains("/org/freedesktop/secrets/collection/work"), "\(daemon.log)")
        #expect(try String(contentsOfFile: answers.path + ".log", encoding: .utf8).contains("SETREPEAT"))
        // The new keyring opens with the password typed into pinentry.
        let session = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession", "('plain', <''>)")
            .components(separatedBy: "objectpath '").last!.split(separator: "'").first!
        _ = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Lock",
                             "([objectpath '/org/freedesktop/secrets/collection/work'],)")
        let password = Array("work-password".utf8).map { "0x\(String($0, radix: 16))" }.joined(separator: ", ")
        _ = try fixture.call("/org/freedesktop/secrets", "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface",
                             "UnlockWithMasterPassword",
                             "(objectpath '/org/freedesktop/secrets/collection/work', (objectpath '\(session)', @ay [], @ay [\(password)], 'text/plain'))")
        daemon.stop()
    }

    @Test("ChangeWithPrompt asks for the current and the new password and re-wraps the key")
    func changeWithPrompt() throws {
        let (fixture, answers) = try fixture(answers: ["login-password", "new-password"])
        let daemon = try fixture.start()
        let login = "/org/freedesktop/secrets/collection/login"
        let reply = try fixture.call("/org/freedesktop/secrets", "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface",
                                     "ChangeWithPrompt", "(objectpath '\(login)',)")
        let prompt = try #require(reply.components(separatedBy: "objectpath '").last?.split(separator: "'").first.map(String.init))
        let recorder = SignalRecorder(listeningOn: fixture.control)  // Completed goes to the prompt's owner only
        _ = try fixture.call(prompt, "org.freedesktop.Secret.Prompt", "Prompt", "('',)")
        #expect(recorder.wait(for: "Completed", path: prompt, timeout: 30)?.arguments.hasPrefix("(false,") == true)
        #expect(try String(contentsOfFile: answers.path + ".log", encoding: .utf8).components(separatedBy: "GETPIN").count == 3)
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        // The new password opens the keyring; the old one no longer does.
        let reopened = try fixture.start(["--unlock"], input: "new-password")
        #expect(try fixture.call(login, "org.freedesktop.DBus.Properties", "Get",
                                 "('org.freedesktop.Secret.Collection', 'Locked')") == "(<false>,)")
        reopened.stop()
    }
}

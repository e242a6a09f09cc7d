import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    /// secretctl as a user runs it, against the provider of this run.
    @Suite struct SecretCtlEndToEnd {
        init() throws { _ = try environment() }

        static var secretctl: String {
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("secretctl").path
        }

        func run(_ arguments: [String], input: String? = nil, environment extra: [String: String] = [:]) throws -> CommandResult {
            try environment().run([Self.secretctl] + arguments, input: input.map { Data($0.utf8) }, environment: extra)
        }

        @Test("set, get, show, list, delete: a transcript")
        func transcript() throws {
            let service = uniqueService() + ".ünïcødé"
            #expect(try run(["set", "--label", "Mail ✓", "--comment", "work", service, "alice"], input: "s3cr3t ✓").status == 0)
            let get = try run(["get", service, "alice"])
            #expect(get.status == 0)
            #expect(get.text == "s3cr3t ✓")  // no newline: stdout is not a terminal
            let json = try run(["get", "--json", service, "alice"])
            #expect(json.text == "{\"account\":\"alice\",\"secret\":\"s3cr3t ✓\",\"service\":\"\(service)\"}\n")
            let show = try run(["show", service, "alice"])
            #expect(show.text.contains("label: Mail ✓\n"))
            #expect(show.text.contains("comment: work\n"))
            #expect(!show.text.contains("s3cr3t"))
            #expect(try run(["show", "--reveal", service, "alice"]).text.contains("secret: s3cr3t ✓\n"))
            #expect(try run(["list", service]).text == "\(service)\talice\tMail ✓\n")
            let listed = try JSONSerialization.jsonObject(with: try run(["list", "--json", service]).output) as? [[String: Any]]
            #expect(listed?.first?["account"] as? String == "alice")
            #expect(listed?.first?["comment"] as? String == "work")
            // The library sees the same item.
            #expect(try Keychain.password(service: service, account: "alice") == "s3cr3t ✓")
            #expect(try run(["delete", service, "alice"]).status == 0)
            #expect(try run(["delete", service, "alice"]).status == 1)
        }

        @Test("binary secrets survive stdin and stdout byte for byte; --json gives base64")
        func binary() throws {
            let service = uniqueService()
            let bytes = Data([0, 1, 2, 0xff, 0, 0x80, 10, 13, 0])
            let stored = try environment().run([Self.secretctl, "set", service, "blob"], input: bytes)
            #expect(stored.status == 0, "\(stored.errorOutput)")
            #expect(try run(["get", service, "blob"]).output == bytes)
            #expect(try run(["get", "--json", service, "blob"]).text.contains("{\"base64\":\"\(bytes.base64EncodedString())\"}"))
        }

        @Test("exit statuses: not found 1, usage 2, no provider 5; a secret as an argument is refused")
        func exitStatuses() throws {
            let service = uniqueService()
            let missing = try run(["get", service, "nobody"])
            #expect(missing.status == 1)
            #expect(missing.errorOutput == "secretctl: no secret for service '\(service)', account 'nobody'\n")
            let onArgv = try run(["set", service, "alice", "hunter2"])
            #expect(onArgv.status == 2)
            #expect(onArgv.errorOutput.contains("pipe it instead"))
            #expect(!onArgv.errorOutput.contains("hunter2"))
            #expect(try run(["get", service]).status == 2)
            #expect(try run(["frobnicate"]).status == 2)
            let noBus = try run(["get", service, "alice"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
            #expect(noBus.status == 5)
            #expect(try run(["status"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"]).status == 5)
            #expect(noBus.errorOutput.hasPrefix("secretctl: no Secret Service provider"))
            let version = try run(["--version"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
            #expect(version.status == 0 && version.text.wholeMatch(of: /secretctl \d+\.\d+\.\d+\n/) != nil, "\(version.text)")
        }
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    @Test("search finds service, account or label text in any case")
    func search() throws {
        let service = uniqueService()
        #expect(try run(["set", "--label", "Work VPN", service, "alice"], input: "1").status == 0)
        #expect(try run(["set", service, "bob"], input: "2").status == 0)
        #expect(try run(["search", "work vpn"]).text == "\(service)\talice\tWork VPN\n")
        #expect(try run(["search", service.uppercased()]).text.split(separator: "\n").count == 2)
        #expect(try run(["search", "no-such-text-\(UUID().uuidString)"]).status == 1)
    }

    @Test("internet passwords are listed, found, read, shown and deleted by server and user; a generic password of the same name comes first")
    func internetPasswords() throws {
        let host = "inet-\(UUID().uuidString.prefix(8)).example.com"
        try InternetKeychain(server: host, protocol: .https, port: 8443).set("web", for: "alice")
        #expect(try run(["list", host]).text == "\(host)\talice\talice@\(host):8443\n")
        let listed = try JSONSerialization.jsonObject(with: try run(["list", "--json", host]).output) as? [[String: Any]]
        #expect(listed?.first?["kind"] as? String == "internet")
        #expect(listed?.first?["url"] as? String == "https://\(host):8443/")
        #expect(try run(["list"]).text.contains("\(host)\talice\t"))
        #expect(try run(["search", host.uppercased()]).text == "\(host)\talice\talice@\(host):8443\n")
        #expect(try run(["get", host, "alice"]).text == "web")
        let show = try run(["show", host, "alice"])
        #expect(show.text.contains("kind: internet\n") && show.text.contains("url: https://\(host):8443/\n"), "\(show.text)")
        // The library tells the kinds apart too.
        #expect(try InternetKeychain.allAccounts().first { $0.service == host }?.kind == .internetPassword)
        #expect(try Keychain.allAccounts().allSatisfy { $0.kind == .genericPassword })

        // A generic password of the same service and account is the one read and deleted first.
        #expect(try run(["set", host, "alice"], input: "generic").status == 0)
        #expect(try run(["get", host, "alice"]).text == "generic")
        let both = try JSONSerialization.jsonObject(with: try run(["list", "--json", host]).output) as? [[String: Any]]
        #expect(both?.map { $0["kind"] as? String } == ["generic", "internet"])
        #expect(try run(["delete", host, "alice"]).status == 0)
        #expect(try run(["get", host, "alice"]).text == "web")
        #expect(try run(["delete", host, "alice"]).status == 0)
        #expect(try InternetKeychain(server: host).allAccounts().isEmpty)
        #expect(try run(["get", host, "alice"]).status == 1)
        #expect(try run(["delete", host, "alice"]).status == 1)
    }

    @Test("generate stores a random password of the asked length and character set and prints it")
    func generate() throws {
        let service = uniqueService()
        let generated = try run(["generate", "--length", "40", "--charset", "digits", service, "admin"])
        #expect(generated.status == 0, "\(generated.errorOutput)")
        #expect(generated.text.count == 40)
        #expect(generated.text.allSatisfy { $0.isNumber })
        #expect(try run(["get", service, "admin"]).text == generated.text)
        #expect(try run(["generate", "--length", "3", service, "x"]).status == 2)
        #expect(try run(["generate", "--charset", "emoji", service, "x"]).status == 2)
    }

    @Test("status, lock and unlock (by password, wrong password, and by prompt with nobody to answer)")
    func keyringControl() throws {
        let status = try run(["status"])
        #expect(status.status == 0, "\(status.errorOutput)")
        #expect(status.text.hasPrefix("provider: :"))
        #expect(status.text.contains("\tunlocked\t"))
        let json = try JSONSerialization.jsonObject(with: try run(["status", "--json"]).output) as? [String: Any]
        #expect((json?["collections"] as? [[String: Any]])?.isEmpty == false)

        #expect(try run(["set", "org.example.listed", "alice"], input: "listed").status == 0)
        #expect(try run(["lock"]).status == 0)
        #expect(try run(["status"]).text.contains("\tlocked\t"))
        // A list that would leave out locked items (secretd seals their attributes) fails with
        // exit 3 instead of printing nothing; gnome-keyring shows them while locked.
        let list = try run(["list"])
        if try environment().command.arguments[0].hasSuffix("secretd") {
            #expect(list.status == 3 && list.errorOutput.contains("locked"), "\(list.errorOutput)")
        } else {
            #expect(list.status == 0 && list.text.contains("org.example.listed"), "\(list.errorOutput)")
        }
        // No prompter on the private bus: the prompt is dismissed, the keyring stays locked.
        #expect(try run(["unlock"]).status == 3)
        let wrong = try run(["unlock", "--password-stdin"], input: "not the password")
        #expect(wrong.status == 4, "\(wrong.errorOutput)")
        try environment().passwordClock.advance(by: 1.01)  // secretd makes the next attempt wait 1 s after a wrong one
        let right = try run(["unlock", "--password-stdin"], input: try environment().command.password + "\n")
        #expect(right.status == 0, "\(right.errorOutput)")
        let after = try run(["status"]).text
        #expect(!after.contains("\tlocked\t"))
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    @Test("a keyring that does not exist exits 1 (nothing matched); a provider that cannot do the call exits 6 (failed)")
    func providerFailure() throws {
        let alias = "no-such-keyring-\(UUID().uuidString.prefix(8))"
        let lock = try run(["lock", "--collection", alias])
        #expect(lock.status == ExitStatus.notFound.rawValue, "\(lock.errorOutput)")
        #expect(lock.errorOutput == "secretctl: no keyring has the alias '\(alias)'\n")
        // Access groups are secretd's: another provider cannot answer, which is not "no such group".
        if try !environment().command.arguments[0].hasSuffix("secretd") {
            let whoami = try run(["whoami"])
            #expect(whoami.status == ExitStatus.failed.rawValue, "\(whoami.errorOutput)")
            #expect(whoami.errorOutput == "secretctl: the provider does not support access groups (secretd has them)\n")
        }
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    @Test("secret-tool compatible verbs: store, lookup, search, clear, with secret-tool's exit statuses")
    func secretToolVerbs() throws {
        let value = "v-\(UUID().uuidString.prefix(8))"
        #expect(try run(["store", "--label=Mail", "service", value, "user", "alice"], input: "first").status == 0)
        #expect(try run(["store", "--label=Mail 2", "service", value, "user", "alice"], input: "second").status == 0)
        // Same attributes: replaced in place, one item, read by secret-tool too.
        #expect(try run(["lookup", "service", value, "user", "alice"]).text == "second")
        let looked = try JSONSerialization.jsonObject(with: try run(["lookup", "--json", "service", value, "user", "alice"]).output)
            as? [String: Any]
        #expect(looked?["secret"] as? String == "second")
        #expect(looked?["label"] as? String == "Mail 2")
        #expect(try environment().run(["secret-tool", "lookup", "service", value, "user", "alice"]).text == "second")
        let search = try run(["search", "--all", "service", value])
        #expect(search.text.components(separatedBy: "\nlabel = ").count == 2)
        #expect(search.text.contains("label = Mail 2\n"))
        #expect(search.text.contains("attribute.user = alice\n"))
        // And the other way round: what secret-tool stored, secretctl finds.
        #expect(try environment().run(["secret-tool", "store", "--label=st", "service", value, "user", "bob"], input: Data("from-st".utf8)).status == 0)
        #expect(try run(["lookup", "service", value, "user", "bob"]).text == "from-st")
        // Nothing found: exit 1 and no message, as secret-tool.
        let missing = try run(["lookup", "service", value, "user", "carol"])
        #expect(missing.status == 1)
        #expect(missing.errorOutput.isEmpty)
        #expect(try run(["clear", "service", value]).status == 0)
        let clearedAgain = try run(["clear", "service", value])
        #expect(clearedAgain.status == 1)
        #expect(clearedAgain.errorOutput.isEmpty)
        #expect(try run(["store", "service", value], input: "x").status == 2)  // no --label
        #expect(try run(["lookup", "service"]).status == 2)  // not pairs
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    @Test("passwd changes the login password (and back); a wrong current password changes nothing")
    func passwd() throws {
        let original = try environment().command.password
        let wrong = try run(["passwd", "--password-stdin"], input: "not-it\nwhatever\n")
        #expect(wrong.status == 4, "\(wrong.errorOutput)")
        if try environment().command.isSecretd {
            // A wrong current password is a wrong password like any other: the next try waits 1 s.
            let waiting = try run(["passwd", "--password-stdin"], input: "\(original)\nchanged-password\n")
            #expect(waiting.status == 4 && waiting.errorOutput.contains("try again in 1 s"), "\(waiting.errorOutput)")
            try environment().passwordClock.advance(by: 1.01)
        }
        let changed = try run(["passwd", "--password-stdin"], input: "\(original)\nchanged-password\n")
        #expect(changed.status == 0, "\(changed.errorOutput)")
        #expect(try run(["lock"]).status == 0)
        let withOld = try run(["unlock", "--password-stdin"], input: original)
        #expect(withOld.status == 4)
        try environment().passwordClock.advance(by: 1.01)  // the wait after that wrong password
        #expect(try run(["unlock", "--password-stdin"], input: "changed-password").status == 0)
        // Back to the harness's password, which restarts of the provider use.
        #expect(try run(["passwd", "--password-stdin"], input: "changed-password\n\(original)\n").status == 0)
        #expect(try run(["passwd", "--password-stdin"], input: "no-newline").status == 2)
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    @Test("export and import: every item back after deletion, duplicates skipped, wrong passphrase refused")
    func exportImport() throws {
        // gnome-keyring rewrites its file per change, so it gets fewer items than secretd. With
        // secretd, 2,500 items are three pages read and three batches written, each next one
        // under way while secretctl handles the one before (LibSecret.readPages, BatchStore).
        let count = try environment().command.arguments[0].hasSuffix("secretd") ? 2_500 : 100
        let service = uniqueService()
        let keychain = try Keychain(service: service)
        for index in 0..<count { try keychain.set("secret-\(index)", for: "account-\(index)") }
        let file = try environment().root.appendingPathComponent("export-\(UUID().uuidString.prefix(6))").path
        let exported = try run(["export", file], input: "correct horse battery\n")
        #expect(exported.status == 0, "\(exported.errorOutput)")
        #expect(try run(["export", file], input: "x\n").status == 2)  // exists, no --force
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        #expect(try keychain.removeAll() == count)
        let wrong = try run(["import", file], input: "wrong passphrase\n")
        #expect(wrong.status == 4)
        #expect(wrong.errorOutput.contains("nothing was imported"))
        #expect(try keychain.allAccounts().isEmpty)

        let imported = try run(["import", file], input: "correct horse battery\n")
        #expect(imported.status == 0, "\(imported.errorOutput)")
        #expect(imported.text.hasPrefix("imported \(count), replaced 0, skipped "))
        #expect(Set(try keychain.allAccounts().map(\.account)) == Set((0..<count).map { "account-\($0)" }))
        for index in Set([0, 999, 1_000, 1_999, 2_000, count / 2, count - 1]) where index < count {
            #expect(try keychain.string(for: "account-\(index)") == "secret-\(index)")
        }
        // list and search TEXT read the items a page (1,000) at a time and keep only what they
        // print: every item, once, in order (by service, then account), as lines and as JSON.
        let accounts = (0..<count).map { "account-\($0)" }.sorted()
        let listed = try run(["list"]).text.split(separator: "\n").filter { $0.hasPrefix(service + "\t") }
        #expect(listed.map { String($0.split(separator: "\t")[1]) } == accounts)
        let found = try JSONSerialization.jsonObject(with: try run(["search", "--json", service]).output) as? [[String: Any]]
        #expect(found?.map { $0["account"] as? String ?? "" } == accounts)
        let again = try run(["import", file], input: "correct horse battery\n")
        #expect(again.text.hasPrefix("imported 0, replaced 0, skipped "))
        #expect(try keychain.allAccounts().count == count)
        #expect(try keychain.removeAll() == count)
    }

    @Test("import of a browser's CSV creates internet passwords")
    func importCSV() throws {
        let host = "csv-\(UUID().uuidString.prefix(8)).example.com"
        let file = try environment().root.appendingPathComponent("passwords-\(UUID().uuidString.prefix(6)).csv")
        try "name,url,username,password\nExample,https://\(host)/login,alice,pa55\n".write(to: file, atomically: true, encoding: .utf8)
        let result = try run(["import", file.path])
        #expect(result.text == "imported 1, replaced 0, skipped 0, failed 0\n", "\(result.errorOutput)")
        #expect(try InternetKeychain(server: host, protocol: .https).password(for: "alice") == "pa55")
        #expect(try InternetKeychain(server: host).removeValue(for: "alice"))
    }

    @Test("export --format csv: refused without --yes off a terminal; with it, a 0600 file of the browsers' columns")
    func exportCSV() throws {
        let host = "csvout-\(UUID().uuidString.prefix(8)).example.com"
        try InternetKeychain(server: host, protocol: .https).set("pa,55", for: "alice")
        defer { _ = try? InternetKeychain(server: host).removeValue(for: "alice") }
        let file = try environment().root.appendingPathComponent("out-\(UUID().uuidString.prefix(6)).csv")
        let refused = try run(["export", "--format", "csv", file.path])
        #expect(refused.status == 2 && refused.errorOutput.contains("will hold every secret in the clear"), "\(refused.errorOutput)")
        #expect(!FileManager.default.fileExists(atPath: file.path))
        let written = try run(["export", "--format", "csv", "--yes", file.path])
        #expect(written.status == 0, "\(written.errorOutput)")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.hasPrefix("name,url,username,password,note\r\n"))
        #expect(text.contains(",https://\(host)/,alice,\"pa,55\","), "\(text)")
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try run(["export", "--format", "xml", file.path]).status == 2)
        #expect(try run(["export", "--yes", file.path]).status == 2)
    }

    @Test("export --format kdbx: KeePassXC's own keepassxc-cli opens it with the passphrase, entry by entry; a wrong one is refused")
    func exportKDBX() throws {
        let host = "kdbx-\(UUID().uuidString.prefix(8)).example.com"
        let service = uniqueService()
        try InternetKeychain(server: host, protocol: .https, port: 8443).set("pa,ss<&>\"w ✓", for: "alice")
        try Keychain(service: service).set("two\nlines", for: "bob", label: "Bob's token")
        defer {
            _ = try? InternetKeychain(server: host).removeValue(for: "alice")
            _ = try? Keychain(service: service).removeValue(for: "bob")
        }
        let file = try environment().root.appendingPathComponent("out-\(UUID().uuidString.prefix(6)).kdbx")
        let written = try run(["export", "--format", "kdbx", file.path], input: "kdbx passphrase\n")
        #expect(written.status == 0, "\(written.errorOutput)")
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let scratch = try environment().root
        let keepass = ["PATH": "/usr/bin:/bin", "HOME": scratch.path, "LANG": "C.UTF-8"]
        let wrong = try CommandResult.run(["keepassxc-cli", "ls", file.path], input: Data("not it\n".utf8), environment: keepass, scratch: scratch)
        #expect(wrong.status != 0)
        let xml = try CommandResult.run(
            ["keepassxc-cli", "export", "-f", "xml", file.path], input: Data("kdbx passphrase\n".utf8), environment: keepass, scratch: scratch)
        try #require(xml.status == 0, "\(xml.errorOutput)")
        let entries = try environment().run(
            ["/usr/bin/python3", "-c", #"""
                import json, sys, xml.etree.ElementTree as ET
                out = {}
                for group in ET.fromstring(sys.stdin.buffer.read()).iter("Group"):
                    for entry in group.findall("Entry"):
                        fields = {s.find("Key").text: s.find("Value").text or "" for s in entry.findall("String")}
                        out[fields["Title"]] = dict(fields, group=group.find("Name").text)
                print(json.dumps(out))
                """#], input: xml.output)
        let parsed = try #require(JSONSerialization.jsonObject(with: entries.output) as? [String: [String: String]], "\(entries.errorOutput)")
        let internet = try #require(parsed.values.first { $0["server"] == host })
        #expect(internet["Password"] == "pa,ss<&>\"w ✓")
        #expect(internet["UserName"] == "alice")
        #expect(internet["URL"] == "https://\(host):8443/")
        #expect(internet["port"] == "8443" && internet["protocol"] == "https")
        let generic = try #require(parsed["Bob's token"])
        #expect(generic["Password"] == "two\nlines")
        #expect(generic["UserName"] == "bob" && generic["service"] == service)
        #expect(generic["group"] == internet["group"])
    }

    @Test("import of a Bitwarden export: internet and generic passwords, notes kept; a second run adds nothing")
    func importBitwarden() throws {
        let host = "bw-\(UUID().uuidString.prefix(8)).example.com"
        let service = uniqueService()
        let file = try environment().root.appendingPathComponent("bitwarden-\(UUID().uuidString.prefix(6)).json")
        let export = #"{"encrypted": false, "folders": [], "items": ["#
            + #"{"type": 1, "name": "Forge", "notes": "ask Ann", "login": {"uris": [{"uri": "https://HOST/"}], "username": "clara", "password": "pw1"}},"#
            + #"{"type": 1, "name": "SERVICE", "login": {"uris": [], "username": "bob", "password": "pässwörd ✓"}},"#
            + #"{"type": 3, "name": "Visa", "card": {"number": "4111111111111111"}},"#
            + #"{"type": 1, "name": "Huge", "notes": "NOTES", "login": {"username": "x", "password": "y"}}]}"#
        try export.replacingOccurrences(of: "HOST", with: host).replacingOccurrences(of: "SERVICE", with: service)
            .replacingOccurrences(of: "NOTES", with: String(repeating: "n", count: 70_000))
            .write(to: file, atomically: true, encoding: .utf8)
        // Notes over the attributes' 64 KiB: that item fails alone, the others are stored.
        let first = try run(["import", file.path])
        #expect(first.status == 6)
        #expect(first.text == "imported 2, replaced 0, skipped 1, failed 1\n", "\(first.errorOutput)")
        #expect(first.errorOutput.contains("1 items were not stored; the first:"), "\(first.errorOutput)")
        #expect(first.errorOutput.contains("is a Bitwarden export (JSON); 1 cards, identities or SSH keys are not imported"))
        #expect(try InternetKeychain(server: host, protocol: .https).password(for: "clara") == "pw1")
        #expect(try Keychain(service: service).string(for: "bob") == "pässwörd ✓")
        let again = try run(["import", file.path])
        #expect(again.text == "imported 0, replaced 0, skipped 3, failed 1\n", "\(again.errorOutput)")
        #expect(try InternetKeychain(server: host).removeValue(for: "clara"))
        #expect(try Keychain(service: service).removeValue(for: "bob"))
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    /// Runs keepassxc-cli with `input` on standard input.
    func keepassxc(_ arguments: [String], input: String) throws {
        let scratch = try environment().root
        let result = try CommandResult.run(
            ["keepassxc-cli"] + arguments, input: Data(input.utf8), environment: ["PATH": "/usr/bin:/bin", "HOME": scratch.path, "LANG": "C.UTF-8"],
            scratch: scratch)
        try #require(result.status == 0, "keepassxc-cli \(arguments): \(result.errorOutput)")
    }

    @Test("import of a KeePassXC database (keepassxc-cli): fields, group path, TOTP; a wrong password imports nothing; a second run adds nothing")
    func importKDBX() throws {
        let host = "kdbx-\(UUID().uuidString.prefix(8)).example.com"
        let service = uniqueService()
        let root = try environment().root
        let name = "kp-\(UUID().uuidString.prefix(6))"
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <KeePassFile><Meta><Generator>KeePassXC</Generator></Meta><Root><Group><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID><Name>Passwords</Name>
            <Entry><UUID>AAAAAAAAAAAAAAAAAAAAEA==</UUID><Tags>work</Tags><CustomData><Item><Key>k</Key><Value>v</Value></Item></CustomData>
            <String><Key>Title</Key><Value>Forge</Value></String><String><Key>UserName</Key><Value>clara</Value></String>
            <String><Key>Password</Key><Value ProtectInMemory="True">pa,ss &lt;&amp;&gt; ✓</Value></String>
            <String><Key>URL</Key><Value>https://\(host):8443/login</Value></String><String><Key>Notes</Key><Value>ask Ann</Value></String>
            <String><Key>otp</Key><Value ProtectInMemory="True">otpauth://totp/f?secret=JBSWY3DP</Value></String>
            <String><Key>PIN</Key><Value ProtectInMemory="True">4711</Value></String></Entry>
            <Group><UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID><Name>Work</Name>
            <Entry><UUID>AAAAAAAAAAAAAAAAAAAAEQ==</UUID><String><Key>Title</Key><Value>\(service)</Value></String>
            <String><Key>UserName</Key><Value>bob</Value></String><String><Key>Password</Key><Value ProtectInMemory="True">pässwörd</Value></String></Entry>
            </Group></Group></Root></KeePassFile>
            """
        try xml.write(to: root.appendingPathComponent("\(name).xml"), atomically: true, encoding: .utf8)
        let file = root.appendingPathComponent("\(name).kdbx").path
        try keepassxc(["import", "-q", "-p", root.appendingPathComponent("\(name).xml").path, file], input: "db pass\ndb pass\n")
        try keepassxc(["add", "-q", "-u", "carol", "-p", file, "Work/\(service).added"], input: "db pass\ncarol-\(service)\n")

        let wrong = try run(["import", file], input: "db pas\n")
        #expect(wrong.status == 4)
        #expect(wrong.errorOutput == "secretctl: wrong password (or key file) for this KeePass database; nothing was imported\n")
        #expect(try Keychain(service: service).allAccounts().isEmpty)

        let first = try run(["import", file], input: "db pass\n")
        #expect(first.status == 0, "\(first.errorOutput)")
        #expect(first.text == "imported 3, replaced 0, skipped 0, failed 0\n", "\(first.errorOutput)")
        #expect(first.errorOutput == "secretctl: \(file) is a KeePass database (KDBX 4.0)\n")
        #expect(try InternetKeychain(server: host, protocol: .https, port: 8443).password(for: "clara") == "pa,ss <&> ✓")
        #expect(try Keychain(service: service).string(for: "bob") == "pässwörd")
        let forge = try JSONSerialization.jsonObject(with: try run(["search", "--json", "--attr", "server=\(host)"]).output) as? [[String: Any]]
        let attributes = try #require(forge?.first?["attributes"] as? [String: String])
        #expect(attributes["notes"] == "ask Ann" && attributes["otpauth"] == "otpauth://totp/f?secret=JBSWY3DP")
        #expect(attributes["field:PIN"] == "4711" && attributes["tags"] == "work" && attributes["port"] == "8443")
        #expect(forge?.first?["label"] as? String == "Forge")
        let bob = try JSONSerialization.jsonObject(with: try run(["search", "--json", "--attr", "service=\(service)"]).output) as? [[String: Any]]
        #expect((bob?.first?["attributes"] as? [String: String])?["folder"] == "Work")
        let added = try run(["search", "--json", "--attr", "service=\(service).added", "--attr", "account=carol"])
        #expect(added.text.contains("\"folder\":\"Work\""), "\(added.text)")

        let again = try run(["import", file], input: "db pass\n")
        #expect(again.text == "imported 0, replaced 0, skipped 3, failed 0\n", "\(again.errorOutput)")
        // --key-file goes with a KeePass database only.
        try "url,username,password\n".write(to: root.appendingPathComponent("\(name).csv"), atomically: true, encoding: .utf8)
        #expect(try run(["import", "--key-file", file, root.appendingPathComponent("\(name).csv").path]).status == 2)

        #expect(try InternetKeychain(server: host).removeValue(for: "clara"))
        #expect(try Keychain(service: service).removeValue(for: "bob"))
        #expect(try Keychain(service: "\(service).added").removeValue(for: "carol"))

        // A database opened by its key file alone: an empty password on standard input.
        let keyFile = root.appendingPathComponent("\(name).keyx").path
        let alone = root.appendingPathComponent("\(name)-key.kdbx").path
        try keepassxc(["db-create", "-q", "--set-key-file", keyFile, alone], input: "")
        try keepassxc(["add", "-q", "--no-password", "-k", keyFile, "-u", "dave", "-p", alone, "\(service).key"], input: "key-only\n")
        let withoutKey = try run(["import", alone], input: "\n")
        #expect(withoutKey.status == 2 && withoutKey.errorOutput.hasPrefix("secretctl: the database password is empty\n"), "\(withoutKey.errorOutput)")
        let byKey = try run(["import", "--key-file", keyFile, alone], input: "")
        #expect(byKey.text == "imported 1, replaced 0, skipped 0, failed 0\n", "\(byKey.errorOutput)")
        #expect(byKey.errorOutput == "secretctl: \(alone) is a KeePass database (KDBX 3.1)\n")
        #expect(try Keychain(service: "\(service).key").string(for: "dave") == "key-only")
        #expect(try Keychain(service: "\(service).key").removeValue(for: "dave"))
    }

    @Test("import keepassxc FILE --collection: the file must be of the kind named; its items go into the keyring chosen, where alone they count as there (without it: in any keyring); an attachment is counted, not imported")
    func importNamedKindIntoCollection() throws {
        let service = uniqueService()
        let root = try environment().root
        let file = root.appendingPathComponent("named-\(UUID().uuidString.prefix(6)).kdbx").path
        let attachment = root.appendingPathComponent("named-\(UUID().uuidString.prefix(6)).txt")
        try "attached".write(to: attachment, atomically: true, encoding: .utf8)
        try keepassxc(["db-create", "-q", "-p", file], input: "db pass\ndb pass\n")
        try keepassxc(["add", "-q", "-u", "erin", "-p", file, service], input: "db pass\nerin-secret\n")
        try keepassxc(["attachment-import", "-q", file, service, "note.txt", attachment.path], input: "db pass\n")

        let wrongKind = try run(["import", "bitwarden", file], input: "db pass\n")
        #expect(wrongKind.status == 2 && wrongKind.errorOutput == "secretctl: \(file) is not a Bitwarden export; nothing was imported\n",
                "\(wrongKind.errorOutput)")
        let withDirectory = try run(["import", "gnome-keyring", "--collection", "session"])
        #expect(withDirectory.status == 2 && withDirectory.errorOutput.contains("--collection goes with a file"), "\(withDirectory.errorOutput)")

        let intoSession = try run(["import", "keepassxc", file, "--collection", "session"], input: "db pass\n")
        #expect(intoSession.text == "imported 1, replaced 0, skipped 0, failed 0\n", "\(intoSession.errorOutput)")
        #expect(intoSession.errorOutput.contains("1 attachment is not imported"), "\(intoSession.errorOutput)")
        let inSession = try KeychainAttributes.search(["service": service], in: "session", unlock: false, loadSecrets: true)
        #expect(inSession.count == 1 && inSession.first.flatMap { $0.secret.map { String(decoding: $0, as: UTF8.self) } } == "erin-secret")
        #expect(try KeychainAttributes.search(["service": service], in: "default", unlock: false, loadSecrets: false).isEmpty)

        // There already in the session keyring; into login, it counts as there only in that keyring;
        // without --collection, when any keyring has it.
        let again = try run(["import", "keepassxc", file, "--collection", "session"], input: "db pass\n")
        #expect(again.text == "imported 0, replaced 0, skipped 1, failed 0\n", "\(again.errorOutput)")
        let anywhere = try run(["import", file], input: "db pass\n")
        #expect(anywhere.text == "imported 0, replaced 0, skipped 1, failed 0\n", "\(anywhere.errorOutput)")
        let intoDefault = try run(["import", file, "--collection", "default"], input: "db pass\n")
        #expect(intoDefault.text == "imported 1, replaced 0, skipped 0, failed 0\n", "\(intoDefault.errorOutput)")
        for _ in 0..<2 { _ = try Keychain(service: service).removeValue(for: "erin") }
        #expect(try KeychainAttributes.search(["service": service], unlock: false, loadSecrets: false).isEmpty)
    }

    @Test("export --format kdbx, then import: every item comes back with its label and attributes; a damaged copy imports nothing")
    func kdbxRoundTrip() throws {
        let host = "rt-\(UUID().uuidString.prefix(8)).example.com"
        let service = uniqueService()
        try InternetKeychain(server: host, protocol: .https, port: 8443).set("pa,ss<&>\"w ✓", for: "alice", label: "Alice's forge")
        try Keychain(service: service).set("two\nlines", for: "bob", label: "Bob's token")
        func attributes(_ query: String) throws -> [[String: Any]] {
            try JSONSerialization.jsonObject(with: try run(["search", "--json", "--attr", query]).output) as? [[String: Any]] ?? []
        }
        let before = try attributes("server=\(host)") + attributes("service=\(service)")
        #expect(before.count == 2)
        let file = try environment().root.appendingPathComponent("rt-\(UUID().uuidString.prefix(6)).kdbx")
        #expect(try run(["export", "--format", "kdbx", file.path], input: "round trip\n").status == 0)
        #expect(try InternetKeychain(server: host).removeValue(for: "alice"))
        #expect(try Keychain(service: service).removeValue(for: "bob"))

        var damaged = try Data(contentsOf: file)
        damaged[damaged.count - 60] ^= 1
        let damagedFile = file.deletingPathExtension().appendingPathExtension("damaged.kdbx")
        try damaged.write(to: damagedFile)
        let refused = try run(["import", damagedFile.path], input: "round trip\n")
        #expect(refused.status == 2)
        #expect(refused.errorOutput.contains("this KeePass database is damaged: block"), "\(refused.errorOutput)")
        #expect(try attributes("server=\(host)").isEmpty)

        let imported = try run(["import", file.path], input: "round trip\n")
        #expect(imported.status == 0, "\(imported.errorOutput)")
        #expect(imported.text.hasPrefix("imported 2, replaced 0, skipped "), "\(imported.text)")
        let after = try attributes("server=\(host)") + attributes("service=\(service)")
        #expect(after.map { $0["label"] as? String } == before.map { $0["label"] as? String })
        #expect(after.map { $0["attributes"] as? [String: String] } == before.map { $0["attributes"] as? [String: String] })
        #expect(try InternetKeychain(server: host, protocol: .https, port: 8443).password(for: "alice") == "pa,ss<&>\"w ✓")
        #expect(try Keychain(service: service).string(for: "bob") == "two\nlines")
        #expect(try InternetKeychain(server: host).removeValue(for: "alice"))
        #expect(try Keychain(service: service).removeValue(for: "bob"))
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    @Test("search --attr matches attributes exactly and prints JSON")
    func searchByAttribute() throws {
        let service = uniqueService()
        #expect(try run(["set", "--label", "L1", service, "alice"], input: "1").status == 0)
        #expect(try run(["set", "--label", "L2", service, "bob"], input: "2").status == 0)
        let both = try run(["search", "--attr", "service=\(service)"])
        #expect(both.text.split(separator: "\n").count == 2)
        let one = try JSONSerialization.jsonObject(
            with: try run(["search", "--json", "--attr", "service=\(service)", "--attr", "account=bob"]).output) as? [[String: Any]]
        #expect(one?.count == 1)
        #expect(one?.first?["label"] as? String == "L2")
        #expect((one?.first?["attributes"] as? [String: String])?["account"] == "bob")
        #expect(try run(["search", "--attr", "service=\(service)", "--attr", "account=carol"]).status == 1)
        #expect(try run(["search", "--attr", "novalue"]).status == 2)
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    /// `git credential ACTION` with secretctl as the only helper; prompting disabled.
    func git(_ action: String, _ request: String) throws -> CommandResult {
        try environment().run(
            ["git", "-c", "credential.helper=", "-c", "credential.helper=!\(Self.secretctl) git-credential", "credential", action],
            input: Data(request.utf8), environment: ["GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"])
    }

    @Test("git credential approve, fill and reject go through secretctl; git's own helper reads the same item")
    func gitCredential() throws {
        let host = "git-\(UUID().uuidString.prefix(8)).example.com"
        #expect(try git("approve", "protocol=https\nhost=\(host)\nusername=alice\npassword=first\n\n").status == 0)
        let filled = try git("fill", "protocol=https\nhost=\(host)\n\n")
        #expect(filled.status == 0, "\(filled.errorOutput)")
        #expect(filled.text.contains("username=alice\n"))
        #expect(filled.text.contains("password=first\n"))
        // Stored in git's own attributes: the library's internet passwords and git's helper read it.
        #expect(try InternetKeychain(server: host, protocol: .https).password(for: "alice") == "first")
        if let helper = try ProviderTests.Interop.gitHelper() {
            let own = try environment().run([helper, "get"], input: Data("protocol=https\nhost=\(host)\n\n".utf8))
            #expect(own.text.contains("password=first"))
        }
        // Rejecting a password that is no longer the stored one keeps the newer one.
        #expect(try git("approve", "protocol=https\nhost=\(host)\nusername=alice\npassword=second\n\n").status == 0)
        #expect(try git("reject", "protocol=https\nhost=\(host)\nusername=alice\npassword=first\n\n").status == 0)
        #expect(try git("fill", "protocol=https\nhost=\(host)\n\n").text.contains("password=second\n"))
        // Rejecting the stored one erases it: git then has nothing and may not prompt.
        #expect(try git("reject", "protocol=https\nhost=\(host)\nusername=alice\npassword=second\n\n").status == 0)
        #expect(try git("fill", "protocol=https\nhost=\(host)\n\n").status == 128)  // git's fatal "could not read Username"
        #expect(try InternetKeychain(server: host).password(for: "alice") == nil)
    }

    @Test("git-credential keeps password_expiry_utc and oauth_refresh_token in the secret, as git's helper does")
    func gitCredentialExtraFields() throws {
        let host = "git-\(UUID().uuidString.prefix(8)).example.com"
        let future = Int(Date().timeIntervalSince1970) + 3600
        let stored = try run(["git-credential", "store"], input:
            "protocol=https\nhost=\(host)\nusername=alice\npassword=tok\npassword_expiry_utc=\(future)\n"
            + "oauth_refresh_token=refresh-me\nwwwauth[]=Basic realm=x\n\n")
        #expect(stored.status == 0, "\(stored.errorOutput)")
        let got = try run(["git-credential", "get"], input: "protocol=https\nhost=\(host)\n\n")
        #expect(got.text == "username=alice\npassword=tok\npassword_expiry_utc=\(future)\noauth_refresh_token=refresh-me\n",
                "\(got.text)")
        // The refresh token is part of the secret, never an attribute.
        let attributes = try InternetKeychain(server: host, protocol: .https).attributes(for: "alice")?.attributes ?? [:]
        #expect(!attributes.values.contains("refresh-me"))
        // Erasing by the password matches the password line only.
        #expect(try run(["git-credential", "erase"], input: "protocol=https\nhost=\(host)\nusername=alice\npassword=tok\n\n").status == 0)
        #expect(try run(["git-credential", "get"], input: "protocol=https\nhost=\(host)\n\n").text.isEmpty)
        // An expired credential is not handed to git.
        let past = Int(Date().timeIntervalSince1970) - 10
        _ = try run(["git-credential", "store"], input:
            "protocol=https\nhost=\(host)\nusername=alice\npassword=old\npassword_expiry_utc=\(past)\n\n")
        #expect(try run(["git-credential", "get"], input: "protocol=https\nhost=\(host)\n\n").text.isEmpty)
        _ = try run(["git-credential", "erase"], input: "protocol=https\nhost=\(host)\nusername=alice\n\n")
    }
}

extension ProviderTests.SecretCtlEndToEnd {
    /// Runs secretctl on a new pseudo-terminal, typing each answer after the prompt that
    /// precedes it; returns the exit status and everything the terminal showed.
    func runOnTerminal(_ arguments: [String], answers: [(prompt: String, answer: String)]) throws -> (status: Int, screen: String) {
        let environment = try environment()
        return try TerminalSession.run([Self.secretctl] + arguments, answers: answers, environment: environment.clientEnvironment,
                                       scratch: environment.root)
    }

    @Test("passwords typed on a terminal are read without echo: passwd asks for all three and changes the password")
    func typedPasswords() throws {
        let original = try environment().command.password
        let typed = try runOnTerminal(["passwd", "--password-stdin"], answers: [
            ("Current password: ", original), ("New password: ", "typed-new-password"),
            ("Repeat the new password: ", "typed-new-password"),
        ])
        #expect(typed.status == 0, "\(typed.screen)")
        #expect(typed.screen.contains("Repeat the new password: "), "\(typed.screen)")
        #expect(!typed.screen.contains(original) && !typed.screen.contains("typed-new-password"), "echoed: \(typed.screen)")
        #expect(try run(["passwd", "--password-stdin"], input: "typed-new-password\n\(original)\n").status == 0)
        // Two different new passwords change nothing.
        let differ = try runOnTerminal(["passwd", "--password-stdin"], answers: [
            ("Current password: ", original), ("New password: ", "one"), ("Repeat the new password: ", "two"),
        ])
        #expect(differ.status == Int(ExitStatus.usage.rawValue), "\(differ.screen)")
        #expect(differ.screen.contains("the new passwords differ; nothing changed"), "\(differ.screen)")
        #expect(try run(["lock"]).status == 0)
        #expect(try run(["unlock", "--password-stdin"], input: original).status == 0)
    }
}

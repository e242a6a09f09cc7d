import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// `secretctl import kwallet` into a running secretd, from wallet files the real kwalletd5
/// wrote in this run (scripts/make-kwallets.py), checked through the Secret Service against
/// what kwalletd itself showed: each entry as KWallet's own Secret Service bridge gives it.
@Suite struct KWalletImportTests {
    /// Lists every keyring secretd has with its items, as JSON, through secretstorage.
    static let dump = #"""
        import base64, json, secretstorage
        bus = secretstorage.dbus_init()
        out = {}
        for c in secretstorage.get_all_collections(bus):
            name = c.collection_path.rsplit("/", 1)[1]
            items = [{"label": i.get_label(), "attributes": i.get_attributes(),
                      "secret": base64.b64encode(i.get_secret()).decode(), "content_type": i.get_secret_content_type(),
                      "created": i.get_created(), "modified": i.get_modified()} for i in c.get_all_items()]
            out[name] = {"label": c.get_label(), "items": items}
        print(json.dumps(out))
        """#

    static var secretctl: String { SecretdFixture.secretctlPath }

    /// The item the import should make of an entry: label, attributes, secret (base64 or a
    /// JSON object for a map), content type, as ksecretd shows an entry no application described.
    static func expectedItem(folder: String, entry: [String: Any]) -> (label: String, attributes: [String: String], contentType: String) {
        let key = entry["key"] as? String ?? ""
        let type = (entry["type"] as? NSNumber)?.intValue ?? 0
        let label = folder == "Secret Service" ? key : "\(folder)/\(key)"
        let typeName = [1: "plaintext", 2: "binary", 3: "map"][type] ?? "?"
        let contentType = [1: "text/plain", 2: "application/octet-stream", 3: "application/json"][type] ?? "?"
        return (label, ["server": folder, "user": key, "type": typeName], contentType)
    }

    static func secret(of entry: [String: Any]) -> Data {
        switch (entry["type"] as? NSNumber)?.intValue {
        case 1: Data((entry["password"] as? String ?? "").utf8)
        default: Data(base64Encoded: entry["value"] as? String ?? "") ?? Data()
        }
    }

    @Test("every wallet comes over whole, as ksecretd shows it; again adds nothing; a wrong password or a damaged file leaves the others")
    func importsRealFiles() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let made = try KWalletFiles.copy(to: fixture.root.appendingPathComponent("kwalletd"))
        let wallets = made.directory
        // The old wallets (SHA-1 keys) go in a directory of their own, imported last.
        let legacy = fixture.root.appendingPathComponent("legacy")
        try FileManager.default.createDirectory(at: legacy, withIntermediateDirectories: true)
        let legacyWallets = made.wallets.filter { $0["legacy"] as? Bool == true }
        for wallet in legacyWallets {
            let file = "\(wallet["name"] as? String ?? "").kwl"
            try FileManager.default.moveItem(at: wallets.appendingPathComponent(file), to: legacy.appendingPathComponent(file))
        }
        // A damaged wallet beside them: its import fails, the others go on.
        let kdewallet = try Data(contentsOf: wallets.appendingPathComponent("kdewallet.kwl"))
        try kdewallet.prefix(kdewallet.count - 5).write(to: wallets.appendingPathComponent("broken.kwl"))
        try FileManager.default.copyItem(at: wallets.appendingPathComponent("kdewallet.salt"), to: wallets.appendingPathComponent("broken.salt"))
        let before = try FileManager.default.contentsOfDirectory(atPath: wallets.path).sorted().map {
            ($0, try Data(contentsOf: wallets.appendingPathComponent($0)))
        }
        let manifest = try #require(made.wallets.first { $0["name"] as? String == "kdewallet" })
        let folders = try #require(manifest["folders"] as? [String: [[String: Any]]])
        let count = folders.values.map(\.count).reduce(0, +)
        let workCount = (made.wallets.first { $0["name"] as? String == "work" }?["folders"] as? [String: [[String: Any]]])?.values.map(\.count).reduce(0, +) ?? -1

        // Only kdewallet's password: work's is another, and nothing can ask for it.
        let first = try fixture.run([Self.secretctl, "import", "kwallet", wallets.path, "--password-stdin"], input: "kde-pw ✓\n")
        #expect(first.status == 6, "\(first.text) \(first.errorOutput)")
        #expect(first.text == "kdewallet: imported \(count), skipped 0, failed 0\nbroken: imported 0, skipped 0, failed \(count)\nwork: imported 0, skipped 0, failed \(workCount)\n", "\(first.errorOutput)")
        #expect(first.errorOutput.contains("broken: the wallet file is damaged"), "\(first.errorOutput)")
        #expect(first.errorOutput.contains("work: wrong password"), "\(first.errorOutput)")
        #expect(!first.errorOutput.contains("kde-pw"))

        // Both passwords: work comes too, kdewallet's items are there already.
        let second = try fixture.run([Self.secretctl, "import", "kwallet", wallets.path, "--password-stdin"], input: "kde-pw ✓\nwork-pw\n")
        #expect(second.text == "kdewallet: imported 0, skipped \(count), failed 0\nbroken: imported 0, skipped 0, failed \(count)\nwork: imported \(workCount), skipped 0, failed 0\n",
                "\(second.errorOutput)")

        let dumped = try fixture.runPython(Self.dump, named: "dump.py")
        try #require(dumped.status == 0, "\(dumped.errorOutput)")
        let collections = try #require(JSONSerialization.jsonObject(with: dumped.output) as? [String: [String: Any]])
        #expect(collections["work"]?["label"] as? String == "work")
        #expect(collections["broken"] == nil)
        let items = collections["login"]?["items"] as? [[String: Any]] ?? []
        #expect(items.count == count, "\(items.map { $0["label"] ?? "" })")
        // Items an application made through kwalletd's Secret Service: as that showed them.
        let bridged = manifest["secret_service"] as? [[String: Any]] ?? []
        #expect(bridged.count == 3)
        for expected in bridged {
            let found = items.filter { $0["label"] as? String == expected["label"] as? String && $0["attributes"] as? [String: String] == expected["attributes"] as? [String: String] }
            #expect(found.count == 1, "\(expected["label"] ?? "") \(expected["attributes"] ?? "")")
            guard let item = found.first else { continue }
            #expect(item["secret"] as? String == expected["secret"] as? String)
            #expect(item["content_type"] as? String == expected["content_type"] as? String)
            #expect((item["created"] as? NSNumber)?.uint64Value == (expected["created"] as? NSNumber)?.uint64Value)
        }
        // The other entries: FOLDER/KEY, server, user and type, as ksecretd gives them.
        for (folder, entries) in folders where !["Secret Service", "Apps"].contains(folder) {
            for entry in entries {
                let (label, attributes, contentType) = Self.expectedItem(folder: folder, entry: entry)
                let found = items.filter { $0["label"] as? String == label && $0["attributes"] as? [String: String] == attributes }
                #expect(found.count == 1, "\(label) \(attributes)")
                guard let item = found.first else { continue }
                #expect(item["content_type"] as? String == contentType, "\(label)")
                let secret = Data(base64Encoded: item["secret"] as? String ?? "") ?? Data()
                if let map = entry["map"] as? [String: String] {
                    #expect(try JSONSerialization.jsonObject(with: secret) as? [String: String] == map, "\(label)")
                } else {
                    #expect(secret == Self.secret(of: entry), "\(label)")
                }
            }
        }
        // The source files are only read.
        let after = try FileManager.default.contentsOfDirectory(atPath: wallets.path).sorted().map {
            ($0, try Data(contentsOf: wallets.appendingPathComponent($0)))
        }
        #expect(after.map(\.0) == before.map(\.0) && after.map(\.1) == before.map(\.1))
        // Lookups find them, as a client of KWallet's Secret Service would.
        #expect(try fixture.run([Self.secretctl, "lookup", "server", "Passwords", "user", "mail.example.org"]).text.hasPrefix("sécret ✓"))
        #expect(try fixture.run(["secret-tool", "lookup", "service", "example", "account", "bob"]).text == "token ✓")
        #expect(try fixture.run(["secret-tool", "lookup", "server", "Passwords", "user", "vpn.example.com"]).text == "vpn-secret")

        // Old wallets, each key from one to four parts of its password.
        #expect(legacyWallets.count == 4)
        let passwords = legacyWallets.compactMap { $0["password"] as? String }.joined(separator: "\n") + "\n"
        let old = try fixture.run([Self.secretctl, "import", "kwallet", legacy.path, "--password-stdin"], input: passwords)
        #expect(old.status == 0, "\(old.text) \(old.errorOutput)")
        #expect(old.text == "legacy24: imported 2, skipped 0, failed 0\nlegacy40: imported 2, skipped 0, failed 0\nlegacy60: imported 2, skipped 0, failed 0\nlegacy8: imported 2, skipped 0, failed 0\n", "\(old.errorOutput)")
        let found = try fixture.run(["secret-tool", "search", "--all", "--unlock", "server", "Passwords", "user", "mail.example.org"])
        #expect(found.text.components(separatedBy: "secret = legacy ✓").count == 5, "\(found.text)")
    }

    @Test("on a terminal it asks for each wallet's password; a wrong one is asked again")
    func asksOnATerminal() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let made = try KWalletFiles.copy(to: fixture.root.appendingPathComponent("kwalletd"))
        let wallets = made.directory
        for wallet in made.wallets where wallet["legacy"] as? Bool == true {
            try FileManager.default.removeItem(at: wallets.appendingPathComponent("\(wallet["name"] as? String ?? "").kwl"))
        }
        let kdePrompt = "Password of the KWallet wallet kdewallet (empty to skip it): "
        let workPrompt = "Password of the KWallet wallet work (empty to skip it): "
        let typed = try TerminalSession.run(
            [Self.secretctl, "import", "kwallet", wallets.path],
            answers: [(kdePrompt, "kde-pw ✓"), (workPrompt, "not-it"), (workPrompt, "work-pw")],
            environment: fixture.environment, scratch: fixture.root)
        #expect(typed.status == 0, "\(typed.screen)")
        #expect(typed.screen.contains("wrong password for work"), "\(typed.screen)")
        #expect(typed.screen.contains("work: imported 2, skipped 0, failed 0"), "\(typed.screen)")
        #expect(!typed.screen.contains("kde-pw") && !typed.screen.contains("work-pw"), "a password was echoed: \(typed.screen)")
        #expect(try fixture.run(["secret-tool", "lookup", "server", "Passwords", "user", "vpn.example.com"]).text == "vpn-secret")
    }

    @Test("no wallets, --replace, a missing salt file, a GPG wallet: clear errors, nothing imported")
    func refusals() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let missing = try fixture.run([Self.secretctl, "import", "kwallet", fixture.root.appendingPathComponent("none").path])
        #expect(missing.status == 1 && missing.errorOutput.contains("no KWallet wallets:"), "\(missing.errorOutput)")
        let replace = try fixture.run([Self.secretctl, "import", "kwallet", "--replace"])
        #expect(replace.status == 2, "\(replace.errorOutput)")

        let wallets = try KWalletFiles.copy(to: fixture.root.appendingPathComponent("kwalletd")).directory
        try FileManager.default.removeItem(at: wallets.appendingPathComponent("work.salt"))
        let unsalted = try fixture.run(
            [Self.secretctl, "import", "kwallet", wallets.appendingPathComponent("work.kwl").path, "--password-stdin"], input: "work-pw\n")
        #expect(unsalted.status == 6, "\(unsalted.errorOutput)")
        #expect(unsalted.errorOutput.contains("work: its salt file (NAME.salt, beside NAME.kwl) is missing"), "\(unsalted.errorOutput)")
        var gpg = [UInt8](try Data(contentsOf: wallets.appendingPathComponent("kdewallet.kwl")))
        gpg[14] = 2
        try Data(gpg).write(to: wallets.appendingPathComponent("gpg.kwl"))
        let refused = try fixture.run(
            [Self.secretctl, "import", "kwallet", wallets.appendingPathComponent("gpg.kwl").path, "--password-stdin"], input: "kde-pw ✓\n")
        #expect(refused.status == 6 && refused.errorOutput.contains("encrypted with GPG"), "\(refused.errorOutput)")
        let collections = try fixture.call(SecretServiceNames.Path.service, "org.freedesktop.DBus.Properties", "Get",
                                           "('org.freedesktop.Secret.Service', 'Collections')")
        #expect(!collections.contains("work") && !collections.contains("gpg"), "\(collections)")
        #expect(try fixture.run(["secret-tool", "search", "--all", "server", "Passwords"]).text.isEmpty)
    }
}

import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    /// The library and other clients see the same items.
    @Suite struct Interop {
        init() throws { _ = try environment() }

        @Test("secret-tool lookup finds what the library stored")
        func secretToolReadsLibrary() throws {
            let service = uniqueService()
            try Keychain.setPassword("from swift ✓", service: service, account: "alice")
            let result = try environment().run(["secret-tool", "lookup", "service", service, "account", "alice"])
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.text == "from swift ✓")
        }

        @Test("the library reads and updates what secret-tool stored")
        func libraryReadsSecretTool() throws {
            let service = uniqueService()
            let stored = try environment().run(
                ["secret-tool", "store", "--label=from secret-tool", "service", service, "account", "bob"],
                input: Data("from cli".utf8))
            #expect(stored.status == 0, "\(stored.errorOutput)")
            #expect(try Keychain.password(service: service, account: "bob") == "from cli")
            #expect(try Keychain.accounts(service: service).map(\.label) == ["from secret-tool"])
            try Keychain.setPassword("updated", service: service, account: "bob")
            #expect(try Keychain.accounts(service: service).count == 1)
            let lookup = try environment().run(["secret-tool", "lookup", "service", service, "account", "bob"])
            #expect(lookup.text == "updated")
            let cleared = try environment().run(["secret-tool", "clear", "service", service, "account", "bob"])
            #expect(cleared.status == 0)
            #expect(try Keychain.password(service: service, account: "bob") == nil)
        }

        /// Runs a Python `keyring` snippet against the private bus; the secret travels on stdin.
        func python(_ code: String, input: String = "") throws -> CommandResult {
            try environment().run(
                ["/usr/bin/python3", "-c", code], input: Data(input.utf8),
                environment: ["PYTHON_KEYRING_BACKEND": "keyring.backends.SecretService.Keyring"])
        }

        @Test("Python keyring reads what the library stored (service, username)")
        func pythonReadsLibrary() throws {
            let service = uniqueService()
            try Keychain.setPassword("shared ✓", service: service, account: "alice")
            let result = try python(
                "import keyring, sys; sys.stdout.write(keyring.get_password(sys.argv[1], 'alice') or '<none>')"
                    .replacingOccurrences(of: "sys.argv[1]", with: "'\(service)'"))
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(result.text == "shared ✓")
        }

        @Test("the library reads, updates and deletes what Python keyring stored")
        func libraryReadsPython() throws {
            let service = uniqueService()
            let stored = try python(
                "import keyring, sys; keyring.set_password('\(service)', 'bob', sys.stdin.read())",
                input: "from python")
            #expect(stored.status == 0, "\(stored.errorOutput)")
            #expect(try Keychain.password(service: service, account: "bob") == "from python")
            let listed = try Keychain.accounts(service: service)
            #expect(listed.map(\.account) == ["bob"])
            #expect(listed.first?.label == "Password for 'bob' on '\(service)'")

            try Keychain.setPassword("from swift", service: service, account: "bob")
            #expect(try Keychain.accounts(service: service).count == 1)
            let read = try python("import keyring, sys; sys.stdout.write(keyring.get_password('\(service)', 'bob'))")
            #expect(read.text == "from swift")
            // Python's own attribute survives the in-place update.
            #expect(try Keychain(service: service).attributes(for: "bob")?.attributes["application"] != nil)

            #expect(try Keychain.deletePassword(service: service, account: "bob"))
            let gone = try python(
                "import keyring, sys; sys.stdout.write(str(keyring.get_password('\(service)', 'bob')))")
            #expect(gone.text == "None")
        }
    }
}

extension ProviderTests.Interop {
    /// git's own libsecret credential helper, built from the source git ships.
    static func gitHelper() throws -> String? {
        let source = "/usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c"
        guard FileManager.default.fileExists(atPath: source) else { return nil }
        let output = try environment().root.appendingPathComponent("git-credential-libsecret").path
        if FileManager.default.isExecutableFile(atPath: output) { return output }
        let flags = try environment().run(["pkg-config", "--cflags", "--libs", "libsecret-1", "glib-2.0"]).text
            .split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
        let built = try environment().run(["cc", "-o", output, source] + flags)
        guard built.status == 0 else { throw HarnessError("cannot build git-credential-libsecret: \(built.errorOutput)") }
        return output
    }

    @Test("git's libsecret credential helper stores and finds credentials; the library reads them")
    func gitCredentialHelper() throws {
        let helper = try #require(try Self.gitHelper(), "git's contrib source is not installed")
        let host = "git-\(UUID().uuidString.prefix(8)).example.com"
        let stored = try environment().run(
            [helper, "store"], input: Data("protocol=https\nhost=\(host)\nusername=alice\npassword=ghp_s3cret\n\n".utf8))
        #expect(stored.status == 0, "\(stored.errorOutput)")
        let found = try environment().run([helper, "get"], input: Data("protocol=https\nhost=\(host)\n\n".utf8))
        #expect(found.text.contains("username=alice"))
        #expect(found.text.contains("password=ghp_s3cret"))
        // git writes user/server/protocol, which the library's internet passwords read.
        #expect(try InternetKeychain(server: host, protocol: .https).password(for: "alice") == "ghp_s3cret")
        let erased = try environment().run(
            [helper, "erase"], input: Data("protocol=https\nhost=\(host)\nusername=alice\n\n".utf8))
        #expect(erased.status == 0)
        #expect(try InternetKeychain(server: host).password(for: "alice") == nil)
    }
}

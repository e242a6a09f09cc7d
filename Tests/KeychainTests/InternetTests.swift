import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    @Suite struct Internet {
        init() throws { _ = try environment() }

        func uniqueServer() -> String { "host-\(UUID().uuidString.prefix(8)).example.com" }

        @Test("internet passwords use GNOME's network-password attributes")
        func gnomeSchema() throws {
            let server = uniqueServer()
            let web = try InternetKeychain(
                server: server, protocol: .https, port: 8443, path: "/repo", authenticationType: .basic,
                domain: "CORP")
            try web.set("token", for: "alice")
            #expect(try web.password(for: "alice") == "token")
            let found = try secretToolSearch(["server": server])
            #expect(found.count == 1)
            let attributes = try #require(found.first)
            #expect(attributes["attribute.user"] == "alice")
            #expect(attributes["attribute.protocol"] == "https")
            #expect(attributes["attribute.port"] == "8443")
            #expect(attributes["attribute.object"] == "/repo")
            #expect(attributes["attribute.authtype"] == "basic")
            #expect(attributes["attribute.domain"] == "CORP")
            #expect(attributes["schema"] == "org.gnome.keyring.NetworkPassword")
            #expect(attributes["label"] == "alice@\(server):8443/repo")
        }

        @Test("unset fields are wildcards on read, and a write only updates its exact key")
        func wildcardsAndExactWrites() throws {
            let server = uniqueServer()
            let https = try InternetKeychain(server: server, protocol: .https)
            let ftp = try InternetKeychain(server: server, protocol: .ftp, port: 21)
            let anyProtocol = try InternetKeychain(server: server)
            try https.set("web", for: "alice")
            try ftp.set("files", for: "alice")
            #expect(try https.password(for: "alice") == "web")
            #expect(try ftp.password(for: "alice") == "files")
            #expect(try anyProtocol.password(for: "alice") != nil)
            #expect(try anyProtocol.allAccounts().count == 2)
            // Writing through the wildcard handle creates its own item, it does not overwrite.
            try anyProtocol.set("generic", for: "alice")
            #expect(try https.password(for: "alice") == "web")
            #expect(try anyProtocol.password(for: "alice") == "generic")
            #expect(try anyProtocol.allAccounts().count == 3)
            // Updating in place keeps one item per key.
            try https.set("web2", for: "alice")
            #expect(try https.password(for: "alice") == "web2")
            #expect(try anyProtocol.allAccounts().count == 3)
            #expect(try https.contains("alice"))
            #expect(try https.attributes(for: "alice")?.service == server)
            #expect(try ftp.removeValue(for: "alice"))
            #expect(try anyProtocol.allAccounts().count == 2)
            #expect(try anyProtocol.removeValue(for: "alice"))
            #expect(try anyProtocol.allAccounts().isEmpty)
        }

        @Test("an item stored by a GNOME-style client is read by the library")
        func readsGnomeItems() throws {
            let server = uniqueServer()
            let stored = try environment().run(
                ["secret-tool", "store", "--label=gvfs", "xdg:schema", "org.gnome.keyring.NetworkPassword",
                 "user", "bob", "server", server, "protocol", "smb", "domain", "WORKGROUP"],
                input: Data("share-secret".utf8))
            #expect(stored.status == 0, "\(stored.errorOutput)")
            let smb = try InternetKeychain(server: server, protocol: .smb, domain: "WORKGROUP")
            #expect(try smb.password(for: "bob") == "share-secret")
            #expect(try smb.allAccounts().map(\.label) == ["gvfs"])
        }

        @Test("async internet variants")
        func asyncInternet() async throws {
            let web = try InternetKeychain(server: uniqueServer(), protocol: .https)
            try await web.set("a", for: "alice")
            #expect(try await web.password(for: "alice") == "a")
            #expect(try await web.data(for: "alice") == Data("a".utf8))
            #expect(try await web.contains("alice"))
            #expect(try await web.attributes(for: "alice")?.account == "alice")
            #expect(try await web.allAccounts().count == 1)
            #expect(try await web.removeValue(for: "alice"))
        }
    }
}

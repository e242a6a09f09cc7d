import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    @Suite struct Handle {
        init() throws { _ = try environment() }

        struct Token: Codable, Equatable, Sendable {
            var access: String
            var refresh: String?
            var expires: Date
            var scopes: [String]
        }

        @Test("strings, bytes and Codable values round-trip through a service handle")
        func valueKinds() throws {
            let keychain = try Keychain(service: uniqueService())
            try keychain.set("text ✓", for: "string")
            let bytes = Data([0, 1, 2, 0, 255, 0, 0x80, 0xC3, 0x28, 0])
            try keychain.set(bytes, for: "bytes")
            let token = Token(access: "a.b.c", refresh: nil, expires: Date(timeIntervalSince1970: 1_800_000_000),
                              scopes: ["read", "write"])
            try keychain.setValue(token, for: "token")

            #expect(try keychain.string(for: "string") == "text ✓")
            #expect(try keychain.data(for: "string") == Data("text ✓".utf8))
            #expect(try keychain.data(for: "bytes") == bytes)
            #expect(try keychain.value(Token.self, for: "token") == token)
            #expect(try keychain.string(for: "missing") == nil)
            #expect(try keychain.data(for: "missing") == nil)
            #expect(try keychain.value(Token.self, for: "missing") == nil)
        }

        @Test("a handle's accessibility class is stored with its writes and reported; a handle without one keeps an item's class")
        func accessibilityClass() throws {
            let service = uniqueService()
            let background = try Keychain(service: service, accessibility: .afterFirstUnlock)
            #expect(background.accessibility == .afterFirstUnlock)
            try background.set("token", for: "sync")
            let item = try #require(try background.attributes(for: "sync"))
            #expect(item.accessibility == .afterFirstUnlock)
            #expect(item.attributes[KeychainAttributeName.accessibility] == "after-first-unlock")

            // Written again through a handle without a class: the class stays.
            let plain = try Keychain(service: service)
            try plain.set("token 2", for: "sync")
            #expect(try plain.attributes(for: "sync")?.accessibility == .afterFirstUnlock)
            try plain.set("other", for: "plain")
            #expect(try plain.attributes(for: "plain")?.accessibility == .whenUnlocked)
            #expect(try plain.attributes(for: "plain")?.attributes[KeychainAttributeName.accessibility] == nil)
            // Another class replaces it; the names round-trip.
            try Keychain(service: service, accessibility: .whenUnlockedThisDeviceOnly).set("token 3", for: "sync")
            #expect(try plain.attributes(for: "sync")?.accessibility == .whenUnlockedThisDeviceOnly)
            #expect(try plain.string(for: "sync") == "token 3")
            for accessibility in KeychainAccessibility.allCases {
                #expect(KeychainAccessibility(name: accessibility.name) == accessibility)
            }
            #expect(KeychainAccessibility(name: "sometimes") == nil)
            let internet = try InternetKeychain(server: service + ".example", accessibility: .afterFirstUnlock)
            try internet.set("pw", for: "bob")
            #expect(try internet.attributes(for: "bob")?.accessibility == .afterFirstUnlock)
            try plain.removeAll()
            _ = try internet.removeValue(for: "bob")
        }

        @Test("a listing reads each item's properties without a proxy, and leaves out an item that went meanwhile")
        func listingReadsProperties() throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            try keychain.set("s1", for: "alice", label: "Alice's", comment: "first")
            try keychain.set("s2", for: "bob")
            let listed = try keychain.allAccounts()
            #expect(listed.map(\.account) == ["alice", "bob"])
            let alice = try #require(listed.first)
            #expect(alice.label == "Alice's" && alice.comment == "first")
            #expect(alice.created.timeIntervalSince1970 > 1_700_000_000 && alice.modified >= alice.created)
            #expect(try keychain.attributes(for: "alice") == alice)

            let summaries = try LibSecret.summaries(["service": service], in: nil)
            #expect(summaries.count == 2 && summaries.allSatisfy { !$0.isLocked })
            let path = try #require(summaries.first { $0.attributes["account"] == "bob" }?.objectPath)
            #expect(try LibSecret.summary(at: path)?.attributes["account"] == "bob")
            #expect(try keychain.removeValue(for: "bob"))
            // Deleted between a search and the read of its properties: left out, not an error.
            #expect(try LibSecret.summary(at: path) == nil)
            #expect(try LibSecret.summary(at: path + "0") == nil)
            #expect(try keychain.allAccounts().map(\.account) == ["alice"])
        }

        @Test("binary data with NUL bytes is stored exactly, and read as text it is a typed error")
        func binaryWithNUL() throws {
            let keychain = try Keychain(service: uniqueService())
            var bytes = Data((0...255).map { UInt8($0) })
            bytes.append(contentsOf: [0, 0, 0])
            try keychain.set(bytes, for: "blob")
            #expect(try keychain.data(for: "blob") == bytes)
            #expect(throws: KeychainError.unexpectedData(reason: "the stored value is not UTF-8 text")) {
                try keychain.string(for: "blob")
            }
        }

        @Test("a value that does not decode as the requested type is unexpectedData, without the value")
        func codableMismatch() throws {
            let keychain = try Keychain(service: uniqueService())
            try keychain.set("{\"access\": 42, \"hidden\": \"TOPSECRET\"}", for: "token")
            do {
                _ = try keychain.value(Token.self, for: "token")
                Issue.record("expected an error")
            } catch {
                guard case .unexpectedData(let reason) = error else {
                    Issue.record("wrong error \(error)")
                    return
                }
                #expect(reason.contains("Token"))
                #expect(!reason.contains("TOPSECRET"))
                #expect(!error.description.contains("TOPSECRET"))
            }
            try keychain.set("not json at all: TOPSECRET", for: "garbage")
            #expect(throws: KeychainError.self) { try keychain.value(Token.self, for: "garbage") }
        }

        @Test("contains, attributes, allAccounts and removeAll see only this service")
        func metadata() throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            let neighbour = try Keychain(service: service + ".other")
            try keychain.set("1", for: "alice", label: "Alice", comment: "work account")
            try keychain.set("2", for: "bob")
            try neighbour.set("3", for: "alice")

            #expect(try keychain.contains("alice"))
            #expect(try !keychain.contains("carol"))
            let item = try #require(try keychain.attributes(for: "alice"))
            #expect(item.service == service)
            #expect(item.account == "alice")
            #expect(item.label == "Alice")
            #expect(item.comment == "work account")
            #expect(item.accessGroup == nil)
            #expect(item.attributes["xdg:schema"] == "org.freedesktop.Secret.Generic")
            #expect(item.attributes["username"] == "alice")
            #expect(try keychain.attributes(for: "carol") == nil)
            #expect(try keychain.allAccounts().map(\.account) == ["alice", "bob"])

            #expect(try keychain.removeAll() == 2)
            #expect(try keychain.allAccounts().isEmpty)
            #expect(try neighbour.string(for: "alice") == "3")
            #expect(try keychain.removeValue(for: "alice") == false)
        }

        @Test("an access group is written as an attribute and scopes reads and writes")
        func accessGroups() throws {
            let service = uniqueService()
            let mail = try Keychain(service: service, accessGroup: "com.example.mail")
            let chat = try Keychain(service: service, accessGroup: "com.example.chat")
            let any = try Keychain(service: service)
            try mail.set("mail-secret", for: "alice")
            #expect(try mail.attributes(for: "alice")?.accessGroup == "com.example.mail")
            #expect(try chat.string(for: "alice") == nil)
            // Without a group, reads see items of every group (as on iOS).
            #expect(try any.string(for: "alice") == "mail-secret")
            try chat.set("chat-secret", for: "alice")
            #expect(try mail.string(for: "alice") == "mail-secret")
            #expect(try chat.string(for: "alice") == "chat-secret")
            #expect(try any.allAccounts().count == 2)
            #expect(try secretToolSearch(["service": service, "keychain:access-group": "com.example.chat"]).count == 1)
        }

        @Test("a collection scopes writes and reads")
        func collections() throws {
            let service = uniqueService()
            let session = try Keychain(service: service, collection: .session)
            let login = try Keychain(service: service, collection: .default)
            let everywhere = try Keychain(service: service)
            try session.set("in memory", for: "alice")
            #expect(try session.string(for: "alice") == "in memory")
            #expect(try login.string(for: "alice") == nil)
            #expect(try everywhere.string(for: "alice") == "in memory")
            let missing = try Keychain(service: service, collection: KeychainCollection(alias: "no-such-alias"))
            #expect(try missing.string(for: "alice") == nil)
            #expect(try missing.allAccounts().isEmpty)
        }

        @Test("label and comment given on write are stored; nil keeps them on update")
        func labelAndComment() throws {
            let keychain = try Keychain(service: uniqueService())
            try keychain.set("v1", for: "alice", label: "Mail (Alice)", comment: "created by test")
            try keychain.set(Data("v2".utf8), for: "alice")
            let item = try #require(try keychain.attributes(for: "alice"))
            #expect(item.label == "Mail (Alice)")
            #expect(item.comment == "created by test")
            #expect(try keychain.string(for: "alice") == "v2")
        }

        @Test("async handle variants")
        func asyncHandle() async throws {
            let keychain = try Keychain(service: uniqueService())
            try await keychain.set("a", for: "alice")
            try await keychain.set(Data([1, 2, 3]), for: "bytes")
            try await keychain.setValue(["k": "v"], for: "dict")
            #expect(try await keychain.string(for: "alice") == "a")
            #expect(try await keychain.data(for: "bytes") == Data([1, 2, 3]))
            #expect(try await keychain.value([String: String].self, for: "dict") == ["k": "v"])
            #expect(try await keychain.contains("alice"))
            #expect(try await keychain.attributes(for: "alice")?.account == "alice")
            #expect(try await keychain.allAccounts().count == 3)
            #expect(try await keychain.removeValue(for: "alice"))
            #expect(try await keychain.removeAll() == 2)
        }
    }
}

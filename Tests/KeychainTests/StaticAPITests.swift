import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    @Suite struct StaticAPI {
        init() throws { _ = try environment() }

        @Test("a stored password reads back, and a missing one is nil")
        func roundTrip() throws {
            let service = uniqueService()
            #expect(try Keychain.password(service: service, account: "alice") == nil)
            try Keychain.setPassword("hunter2", service: service, account: "alice")
            #expect(try Keychain.password(service: service, account: "alice") == "hunter2")
            #expect(try Keychain.password(service: service, account: "bob") == nil)
        }

        @Test("unicode service, account and secret survive the round trip")
        func unicode() throws {
            let service = uniqueService() + ".сервис.日本"
            let account = "ユーザー👩‍💻@例え.jp"
            let secret = "pässwörd ✓ 🔑 \u{1F600} ñ"
            try Keychain.setPassword(secret, service: service, account: account)
            #expect(try Keychain.password(service: service, account: account) == secret)
            #expect(try Keychain.accounts(service: service).map(\.account) == [account])
        }

        @Test("a 1 MiB secret is stored and read back intact")
        func largeSecret() throws {
            let service = uniqueService()
            let secret = String((0..<(1 << 20)).map { i in Character(Unicode.Scalar(UInt8(97 + i % 26))) })
            try Keychain.setPassword(secret, service: service, account: "big")
            let read = try Keychain.password(service: service, account: "big")
            #expect(read?.utf8.count == 1 << 20)
            #expect(read == secret)
        }

        @Test("setting an existing service+account updates the item in place")
        func updateInPlace() throws {
            let service = uniqueService()
            try Keychain.setPassword("one", service: service, account: "alice", label: "First", comment: "c1")
            let before = try #require(try Keychain(service: service).attributes(for: "alice"))
            try Keychain.setPassword("two", service: service, account: "alice")
            #expect(try Keychain.password(service: service, account: "alice") == "two")
            let items = try Keychain.accounts(service: service)
            #expect(items.count == 1)
            // nil label and comment keep what was there; the provider's item stays the same item.
            #expect(items.first?.label == "First")
            #expect(items.first?.comment == "c1")
            #expect(items.first?.created == before.created)
            #expect(try secretToolSearch(["service": service]).count == 1)
            try Keychain.setPassword("three", service: service, account: "alice", label: "Second", comment: "c2")
            let updated = try Keychain.accounts(service: service)
            #expect(updated.map(\.label) == ["Second"])
            #expect(updated.map(\.comment) == ["c2"])
        }

        @Test("delete removes the item and reports whether there was one")
        func delete() throws {
            let service = uniqueService()
            try Keychain.setPassword("x", service: service, account: "alice")
            #expect(try Keychain.deletePassword(service: service, account: "alice"))
            #expect(try Keychain.password(service: service, account: "alice") == nil)
            #expect(try !Keychain.deletePassword(service: service, account: "alice"))
        }

        @Test("allAccounts and accounts(service:) list items with label and dates")
        func listing() throws {
            let service = uniqueService()
            let other = uniqueService()
            let start = Date().addingTimeInterval(-5)
            try Keychain.setPassword("1", service: service, account: "bob")
            try Keychain.setPassword("2", service: service, account: "alice", label: "Alice's")
            try Keychain.setPassword("3", service: other, account: "carol")
            let items = try Keychain.accounts(service: service)
            #expect(items.map(\.account) == ["alice", "bob"])
            #expect(items.map(\.service) == [service, service])
            #expect(items[0].label == "Alice's")
            #expect(items[1].label == "Password for 'bob' on '\(service)'")
            #expect(items.allSatisfy { $0.created >= start && $0.modified >= $0.created })
            let all = try Keychain.allAccounts()
            #expect(all.contains { $0.service == service && $0.account == "alice" })
            #expect(all.contains { $0.service == other && $0.account == "carol" })
            #expect(!all.contains { $0.attributes[KeychainAttributeName.schema] == KeychainAttributeName.networkSchema })
        }

        @Test("async variants work from tasks")
        func asyncVariants() async throws {
            let service = uniqueService()
            try await Keychain.setPassword("async", service: service, account: "alice")
            #expect(try await Keychain.password(service: service, account: "alice") == "async")
            #expect(try await Keychain.accounts(service: service).count == 1)
            #expect(try await Keychain.allAccounts().contains { $0.service == service })
            #expect(try await Keychain.deletePassword(service: service, account: "alice"))
            #expect(try await Keychain.password(service: service, account: "alice") == nil)
        }
    }
}

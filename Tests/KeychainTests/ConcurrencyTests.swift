import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    @Suite struct Concurrency {
        init() throws { _ = try environment() }

        @Test("many tasks writing distinct accounts lose nothing")
        func distinctWriters() async throws {
            let keychain = try Keychain(service: uniqueService())
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        for index in 0..<10 {
                            try await keychain.set("secret-\(writer)-\(index)", for: "account-\(writer)-\(index)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let items = try await keychain.allAccounts()
            #expect(items.count == 80)
            #expect(Set(items.map(\.account)).count == 80)
            for writer in 0..<8 {
                #expect(try await keychain.string(for: "account-\(writer)-9") == "secret-\(writer)-9")
            }
        }

        @Test("many tasks writing the same account leave exactly one item with one of their values")
        func sameKeyWriters() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<16 {
                    group.addTask { try await keychain.set("value-\(writer)", for: "shared") }
                }
                try await group.waitForAll()
            }
            #expect(try await keychain.allAccounts().count == 1)
            #expect(try secretToolSearch(["service": service]).count == 1)
            let value = try #require(try await keychain.string(for: "shared"))
            #expect((0..<16).map { "value-\($0)" }.contains(value))
        }

        @Test("a slow call does not block the cooperative pool")
        func poolNotBlocked() async throws {
            // More simultaneous calls than the pool has threads: they would deadlock or
            // serialise if each one blocked a pool thread.
            let keychain = try Keychain(service: uniqueService())
            try await keychain.set("x", for: "alice")
            let width = ProcessInfo.processInfo.activeProcessorCount * 4
            let values = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<width { group.addTask { try await keychain.string(for: "alice") } }
                var collected: [String?] = []
                for try await value in group { collected.append(value) }
                return collected
            }
            #expect(values.count == width)
            #expect(values.allSatisfy { $0 == "x" })
        }
    }
}

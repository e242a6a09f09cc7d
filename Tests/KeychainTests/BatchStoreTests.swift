import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    /// `secretctl import`'s batches (`KeychainAttributes.BatchStore`, issue 51 point 6): each
    /// batch is one `ImportPackedItems` call (`ImportItems` with a secretd that has none), and the
    /// next is sent before the reply to the one before when no item of it may be the same item as
    /// one of that one. Serialized: one test takes the fallback for the whole process.
    @Suite(.serialized) struct BatchStore {
        typealias Item = KeychainAttributes.BatchStore.Item

        @Test("items that secretd may place as one item are never in two batches under way at once")
        func sameItemAcrossBatches() {
            func item(_ attributes: [String: String]) -> Item { ("label", attributes, Data("s".utf8)) }
            let first = [item(["service": "s", "account": "a"]), item(["service": "s", "account": "b"])]
            #expect(KeychainAttributes.BatchStore.shareNoItem(first, [item(["service": "s", "account": "c"])]))
            #expect(KeychainAttributes.BatchStore.shareNoItem(first, [item(["service": "s"])]))
            for same in [
                ["service": "s", "account": "b"],
                ["service": "s", "account": "b", ItemIdentity.schemaAttribute: "org.freedesktop.Secret.Generic"],
                ["service": "s", "account": "b", AccessGroupNames.attribute: "team"],
                ["service": "s", "account": "b", ItemAccessibility.attribute: ItemAccessibility.afterFirstUnlock.rawValue],
            ] {
                #expect(!KeychainAttributes.BatchStore.shareNoItem(first, [item(["service": "s", "account": "z"]), item(same)]), "\(same)")
            }
        }

        @Test("a batch secretd refuses writes nothing while the next, sent ahead, is written; an item in two batches ends with the later one's secret; the same with ImportItems where secretd has no ImportPackedItems", arguments: [true, false])
        func refusedBatchAndLaterItem(packed: Bool) throws {
            LibSecret.ImportBatch.packedMethod = packed ? "ImportPackedItems" : "ImportPackedItemsNotHere"
            defer { LibSecret.ImportBatch.packedMethod = "ImportPackedItems" }
            let service = uniqueService()
            let isSecretd = try environment().command.arguments[0].hasSuffix("secretd")
            func items(_ prefix: String, _ count: Int) -> [Item] {
                (0..<count).map { ("\(prefix) \($0)", ["service": service, "account": "\(prefix)-\($0)"], Data("\(prefix)-secret-\($0)".utf8)) }
            }
            var refused = items("a", 1_000)  // one item in a group this client is no member of
            refused[500].attributes[AccessGroupNames.attribute] = "no-member-of-this"
            var later = items("c", 999)
            later.append(("b 0 again", ["service": service, "account": "b-0"], Data("b-secret-0-again".utf8)))
            let store = KeychainAttributes.BatchStore([refused, items("b", 1_000), later], collection: nil, replace: true)
            defer { _ = try? Keychain(service: service).removeAll() }

            let counts = try (0..<3).map { try store.store($0) }
            guard isSecretd else {
                #expect(counts.allSatisfy { $0 == nil })  // no bulk call: secretctl stores them one by one
                return
            }
            #expect(counts[0] == nil)
            #expect(counts[1].map { [$0.stored, $0.replaced, $0.skipped] } == [1_000, 0, 0])
            #expect(counts[2].map { [$0.stored, $0.replaced, $0.skipped] } == [999, 1, 0])
            func secret(_ account: String) throws -> String? {
                try KeychainAttributes.search(["service": service, "account": account], unlock: false, loadSecrets: true)
                    .first?.secret.map { String(decoding: $0, as: UTF8.self) }
            }
            #expect(try secret("a-0") == nil && secret("a-999") == nil, "nothing of the refused batch")
            #expect(try secret("b-999") == "b-secret-999")
            #expect(try secret("b-0") == "b-secret-0-again")
            #expect(try secret("c-998") == "c-secret-998")
            #expect(try Keychain(service: service).allAccounts().count == 1_999)
        }
    }

    /// `secretctl export`'s, `list`'s and `search`'s reads (`KeychainAttributes.forEachPage`):
    /// a page of items a `ReadPackedItems` call (`ReadItems` with a secretd that has none).
    /// Serialized: one test takes the fallback for the whole process.
    @Suite(.serialized) struct BulkRead {
        @Test("every item is read back a page a call with its label, attributes, times and secret, the same with ReadItems where secretd has no ReadPackedItems", arguments: [true, false])
        func pages(packed: Bool) throws {
            LibSecret.readPackedMethod = packed ? "ReadPackedItems" : "ReadPackedItemsNotHere"
            defer { LibSecret.readPackedMethod = "ReadPackedItems" }
            let service = uniqueService()
            let isSecretd = try environment().command.arguments[0].hasSuffix("secretd")
            let items = (0..<2_500).map { n in
                (label: "item \(n) ✓", attributes: ["service": service, "account": "a\(n)"], secret: Data("secret \(n) ß".utf8))
            }
            let store = KeychainAttributes.BatchStore(stride(from: 0, to: items.count, by: 1_000).map { Array(items[$0..<min(items.count, $0 + 1_000)]) },
                                                      collection: nil, replace: false)
            defer { _ = try? Keychain(service: service).removeAll() }
            guard isSecretd else {
                try Keychain(service: service).set("s", for: "a")
                #expect(try KeychainAttributes.forEachPage(["service": service], loadSecrets: true) { _, _ in } == false, "no bulk call")
                return
            }
            #expect(try (0..<3).map { try store.store($0)?.stored } == [1_000, 1_000, 500])
            var read: [KeychainAttributes.Match] = []
            var pages: [(count: Int, total: Int)] = []
            let paged = try KeychainAttributes.forEachPage(["service": service], loadSecrets: true) { page, total in
                read += page
                pages.append((page.count, total))
            }
            #expect(paged && read.count == 2_500)
            #expect(pages.map(\.count) == [1_000, 1_000, 500] && pages.allSatisfy { $0.total == 2_500 })
            let byAccount = Dictionary(uniqueKeysWithValues: read.map { ($0.attributes["account"] ?? "", $0) })
            for (n, item) in items.enumerated() {
                let match = byAccount["a\(n)"]
                #expect(match?.label == item.label && match?.secret == item.secret && match?.attributes["service"] == service)
                #expect(match.map { abs($0.created.timeIntervalSinceNow) < 600 && $0.modified >= $0.created } == true)
            }
        }
    }
}


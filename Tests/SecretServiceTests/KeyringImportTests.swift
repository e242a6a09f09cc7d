import DBusValues
import Foundation
import KeychainCore
@testable import SecretCrypto
@testable import SecretService
@testable import SecretStore
import Testing

/// `Import1.ImportKeyring` of more than ``ItemBatchWrite/itemsPerTurn`` items
/// (``KeyringImportWrite``): the call checked in turns of the loop, the new keyring's key
/// derived and the keyring created, the items planned in turns, sealed and written off the loop
/// in one transaction, published back on it; with the outcome the loop's own import gives. In
/// this process, with the off-loop work kept until the test runs it (``LargeItemSealingTests/Setup``).
@Suite struct KeyringImportTests {
    typealias Setup = LargeItemSealingTests.Setup

    /// An item of the import: attributes `kind = keyring`, `n = n`, with `times` when given.
    static func item(_ n: Int, _ secret: String, session: String, label: DBusValue? = nil, times: (UInt64, UInt64)? = nil) -> DBusValue {
        var properties: [String: DBusValue] = [
            SecretServiceNames.Property.itemLabel: label ?? .string("item \(n)"),
            SecretServiceNames.Property.itemAttributes: .stringMap(["kind": "keyring", "n": "\(n)"]),
        ]
        if let (created, modified) = times {
            properties["\(SecretServiceNames.Interface.item).Created"] = .uint64(created)
            properties["\(SecretServiceNames.Interface.item).Modified"] = .uint64(modified)
        }
        return .tuple([
            .properties(properties),
            .tuple([.objectPath(session), .bytes(DBusBytes([])), .bytes(DBusBytes(Array(secret.utf8))), .string("text/plain")]),
        ])
    }

    /// Sends `ImportKeyring` of `items` into the keyring `name` as `:1.1`, with `password`;
    /// `answer` is set when it is answered.
    static func importKeyring(_ setup: Setup, name: String, password: String, _ items: [DBusValue],
                              answer: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        let session = setup.sessions[":1.1"]!
        let call = MethodCall(
            sender: ":1.1", path: SecretServiceNames.Path.service, interface: SecretServiceNames.Interface.importing, method: "ImportKeyring",
            arguments: [
                .string(name), .properties([SecretServiceNames.Property.collectionLabel: .string("Migrated")]),
                .tuple([.objectPath(session), .bytes(DBusBytes([])), .bytes(DBusBytes(Array(password.utf8))), .string("text/plain")]),
                .array(element: "(a{sv}(oayays))", items),
            ])
        setup.daemon.router.handle(call) {
            answer($0)
            _ = setup.daemon.commitPending()
        }
    }

    /// The paths of the items `n` of `collection`, as `:1.2` finds them.
    static func paths(_ setup: Setup, in collection: String, item n: Int) -> [String] {
        setup.call(":1.2", SecretServiceNames.Path.collection(collection), Introspection.collection, "SearchItems",
                   [.stringMap(["kind": "keyring", "n": "\(n)"])])?.success?.tuple?.first?.objectPaths ?? []
    }

    /// The secrets of the items `n` of `collection`, read by `:1.2`.
    static func secrets(_ setup: Setup, in collection: String, item n: Int) -> [String] {
        paths(setup, in: collection, item: n).compactMap { setup.secret(":1.2", of: $0).map { String(decoding: $0, as: UTF8.self) } }.sorted()
    }

    @Test("a large keyring goes in off the loop: the call is read in turns, the new keyring created, its items planned in turns, sealed and written off the loop; others are answered meanwhile; an item twice with the same secret is skipped, with another secret kept; items keep their own times")
    func newKeyring() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        let items = (0..<150).map { Self.item($0, "secret \($0)", session: session, times: $0 == 7 ? (1_000, 2_000) : nil) }
            + [Self.item(5, "secret 5", session: session), Self.item(6, "another secret 6", session: session)]
        var answer: Result<DBusValue, SecretServiceError>?
        Self.importKeyring(setup, name: "migrated", password: "migrated-password", items) { answer = $0 }
        #expect(setup.deferred.turns.count == 1 && setup.deferred.pending.isEmpty, "the call is read in turns")
        #expect(setup.call(":1.2", SecretServiceNames.Path.service, Introspection.service, "ReadAlias", [.string("default")])?.success != nil)
        setup.deferred.runTurns()
        #expect(setup.deferred.pending.count == 1, "then the new keyring's key is derived off the loop")
        setup.deferred.runNext()
        _ = setup.daemon.commitPending()
        let created = try #require(try setup.daemon.keyring.collection(named: "migrated"))
        #expect(Self.paths(setup, in: "migrated", item: 0).isEmpty, "created first, without its items")
        #expect(setup.deferred.turns.count == 1, "its items are planned in turns")
        setup.deferred.runTurns()
        #expect(answer == nil && setup.deferred.pending.count == 1, "sealed off the loop")
        setup.deferred.runNext()
        #expect(answer == nil && setup.deferred.pending.count == 1, "written off the loop")
        #expect(Self.paths(setup, in: "migrated", item: 0).isEmpty)
        setup.deferred.runNext()
        setup.deferred.runTurns()
        #expect(answer?.success == .tuple([.objectPath(SecretServiceNames.Path.collection("migrated")), .uint32(151), .uint32(1)]),
                "\(String(describing: answer))")
        #expect(Self.secrets(setup, in: "migrated", item: 0) == ["secret 0"])
        #expect(Self.secrets(setup, in: "migrated", item: 5) == ["secret 5"], "the same item twice: once")
        #expect(Self.secrets(setup, in: "migrated", item: 6) == ["another secret 6", "secret 6"], "other secrets: both kept")
        #expect(Self.secrets(setup, in: "migrated", item: 149) == ["secret 149"])
        let timed = try #require(Self.paths(setup, in: "migrated", item: 7).first.flatMap { path -> Store.ItemRecord? in
            guard case .item(_, let id) = ObjectPaths.parse(path) else { return nil }
            return try? setup.daemon.keyring.item(id: id)
        })
        #expect(timed.created == 1_000 && timed.modified == 2_000)
        #expect(!setup.daemon.keyring.apartWrites.isWriting && setup.deferred.pending.isEmpty)
    }

    @Test("into a keyring there already: the items it holds with the same attributes and secret are skipped, the others written off the loop")
    func existingKeyring() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        var first: Result<DBusValue, SecretServiceError>?
        Self.importKeyring(setup, name: "login", password: "", (0..<10).map { Self.item($0, "secret \($0)", session: session) }) { first = $0 }
        setup.deferred.runAll()
        #expect(first?.success?.tuple?.dropFirst() == [.uint32(10), .uint32(0)], "a small import, on the loop")

        var answer: Result<DBusValue, SecretServiceError>?
        Self.importKeyring(setup, name: "login", password: "", (0..<100).map { Self.item($0, "secret \($0)", session: session) }) { answer = $0 }
        setup.deferred.runAll()
        #expect(answer?.success == .tuple([.objectPath(SecretServiceNames.Path.collection("login")), .uint32(90), .uint32(10)]),
                "\(String(describing: answer))")
        #expect(Self.secrets(setup, in: "login", item: 3) == ["secret 3"])
        #expect(Self.secrets(setup, in: "login", item: 99) == ["secret 99"])
    }

    @Test("a new keyring locked while its items are sealed: the import is refused and the keyring it created is gone")
    func lockedMeanwhile() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        var answer: Result<DBusValue, SecretServiceError>?
        Self.importKeyring(setup, name: "migrated", password: "migrated-password", (0..<100).map { Self.item($0, "s\($0)", session: session) }) {
            answer = $0
        }
        setup.deferred.runTurns()
        setup.deferred.runNext()  // the key derived, the keyring created
        setup.deferred.runTurns()  // planned; its seal waits
        let created = try #require(try setup.daemon.keyring.collection(named: "migrated"))
        #expect(setup.daemon.keyring.lock(created))
        setup.deferred.runAll()
        _ = setup.daemon.commitPending()
        #expect(answer?.failure == .isLocked("the keyring is locked"), "\(String(describing: answer))")
        #expect(try setup.daemon.keyring.collection(named: "migrated") == nil, "a failed import leaves nothing behind")
    }

    @Test("a bad item in a later turn refuses the call before anything is derived or created")
    func badItemLater() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        var items = (0..<150).map { Self.item($0, "s\($0)", session: session) }
        items[140] = Self.item(140, "s140", session: session, label: .uint32(3))
        var answer: Result<DBusValue, SecretServiceError>?
        Self.importKeyring(setup, name: "migrated", password: "migrated-password", items) { answer = $0 }
        #expect(answer == nil)
        setup.deferred.runAll()
        #expect(answer?.failure == .invalidArgs("an item's Label must be s and its Attributes a{ss}"), "\(String(describing: answer))")
        #expect(try setup.daemon.keyring.collection(named: "migrated") == nil)
    }
}

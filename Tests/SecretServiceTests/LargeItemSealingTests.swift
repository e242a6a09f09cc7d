import DBusValues
import Foundation
import KeychainCore
@testable import SecretCrypto
@testable import SecretService
@testable import SecretStore
import Testing

/// `CreateItem` of a large secret: sealed off the main loop (``SealingQueue``) for the id the
/// item will have, then written off the loop too, through the store's second connection
/// (``ApartWriter``). In this process, with the off-loop work kept until the test runs it, so
/// what happens meanwhile is chosen by the test.
@Suite struct LargeItemSealingTests {
    typealias Fixture = InProcessDaemonTests.Fixture

    /// A daemon whose off-loop work waits in `deferred`, its login keyring unlocked, and a plain
    /// session for the clients `:1.1` and `:1.2`.
    struct Setup {
        let deferred = DeferredOffLoop()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inprocess-\(UUID().uuidString)")
        let daemon: Provider
        var sessions: [String: String] = [:]

        init(configuration: Configuration = Configuration()) throws {
            let clock = InProcessDaemonTests.ManualClock()
            daemon = try Provider(
                options: Daemon.Options(dataDirectory: directory, kdf: .testing, configuration: configuration), store: Store(directory: directory),
                clock: { clock.now },
                offLoop: deferred.offLoop)
            _ = try daemon.unlockLogin(password: SecureBytes(Array("right".utf8)))
            daemon.serve(on: InProcessDaemonTests.RecordingEndpoint())
            for client in [":1.1", ":1.2"] {
                sessions[client] = try #require(
                    call(client, Fixture.service, Introspection.service, "OpenSession", [.string("plain"), .variant(.string(""))])?
                        .success?.tuple?.last?.objectPath)
            }
        }

        /// Calls `method` as `client`; nil while its answer waits. Commits what it wrote, as
        /// the server does before replying.
        func call(_ client: String, _ path: String, _ interface: String, _ method: String, _ arguments: [DBusValue])
            -> Result<DBusValue, SecretServiceError>?
        {
            var answer: Result<DBusValue, SecretServiceError>?
            let call = MethodCall(sender: client, path: path, interface: interface, method: method, arguments: arguments)
            if Introspection.interfaces[interface]?.method(method)?.repliesLater == true {
                daemon.router.handle(call) { answer = $0 }
            } else {
                answer = daemon.router.handle(call)
            }
            _ = daemon.commitPending()
            return answer
        }

        /// `CreateItem` in the login keyring as `client`; `answer` is set when it is answered.
        func create(_ client: String, _ attributes: [String: String], _ secret: [UInt8], answer: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
            let arguments: [DBusValue] = [
                .properties([SecretServiceNames.Property.itemLabel: .string("Large"), SecretServiceNames.Property.itemAttributes: .stringMap(attributes)]),
                .tuple([.objectPath(sessions[client]!), .bytes(DBusBytes([])), .bytes(DBusBytes(secret)), .string("application/octet-stream")]),
                .boolean(true),
            ]
            daemon.router.handle(MethodCall(sender: client, path: Fixture.login, interface: Introspection.collection, method: "CreateItem", arguments: arguments)) {
                answer($0)
                _ = daemon.commitPending()
            }
        }

        /// The secret of the item at `path`, read by `client`.
        func secret(_ client: String, of path: String) -> [UInt8]? {
            call(client, path, Introspection.item, "GetSecret", [.objectPath(sessions[client]!)])?.success?.tuple?.first?.tuple?[2].bytes?.array
        }

        /// The paths of the login keyring's items with `attributes`, as `client` finds them.
        func search(_ client: String, _ attributes: [String: String]) -> [String] {
            call(client, Fixture.login, Introspection.collection, "SearchItems", [.stringMap(attributes)])?.success?.tuple?.first?.objectPaths ?? []
        }

        /// As ``search(_:_:)``, but nothing commits afterwards: the main connection's group
        /// (its read snapshot) stays open, as it does from one call to the next in the daemon.
        func searchLeavingGroupOpen(_ client: String, _ attributes: [String: String]) -> [String]? {
            daemon.router.handle(MethodCall(
                sender: client, path: Fixture.login, interface: Introspection.collection, method: "SearchItems",
                arguments: [.stringMap(attributes)])).success?.tuple?.first?.objectPaths
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    static let large = (0..<(SealingQueue.threshold + 1000)).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    @Test("a large item is sealed off the loop: other clients are answered meanwhile, an item created meanwhile takes another id, and both read back")
    func othersGoOn() throws {
        let setup = try Setup()
        defer { setup.remove() }
        var large: Result<DBusValue, SecretServiceError>?
        setup.create(":1.1", ["kind": "large"], Self.large) { large = $0 }
        #expect(large == nil && setup.deferred.pending.count == 1, "the sealing waits off the loop")

        // Meanwhile another client creates a small item (at once, on the loop) and reads.
        var small: Result<DBusValue, SecretServiceError>?
        setup.create(":1.2", ["kind": "small"], Array("small".utf8)) { small = $0 }
        let smallPath = try #require(small?.success?.tuple?.first?.objectPath)
        #expect(setup.call(":1.2", Fixture.service, Introspection.service, "ReadAlias", [.string("default")])?.success?.tuple?.first?.objectPath == Fixture.login)
        #expect(setup.search(":1.2", ["kind": "large"]).isEmpty, "not there before it is written")

        setup.deferred.runNext()
        #expect(large == nil && setup.deferred.pending.count == 1, "sealed; the writing waits off the loop")
        // A read snapshot of the main connection, begun before the write is committed (the
        // group stays open: nothing commits it here).
        #expect(setup.searchLeavingGroupOpen(":1.2", ["kind": "large"]) == [])
        var later: Result<DBusValue, SecretServiceError>?
        setup.deferred.runNext {
            // Committed, and the loop has not heard yet: a write on the main connection takes a
            // fresh snapshot rather than write over one that does not have the large item.
            setup.create(":1.2", ["kind": "later"], Array("later".utf8)) { later = $0 }
        }
        #expect(later?.success?.tuple?.first?.objectPath != nil, "\(String(describing: later))")
        let largePath = try #require(large?.success?.tuple?.first?.objectPath)
        #expect(largePath != smallPath)
        // Its id was reserved before the small item's was given.
        #expect(try #require(Int64(largePath.split(separator: "/").last!)) < (try #require(Int64(smallPath.split(separator: "/").last!))))
        #expect(setup.search(":1.2", ["kind": "large"]) == [largePath])
        #expect(setup.secret(":1.1", of: largePath) == Self.large)
        #expect(setup.search(":1.2", ["kind": "later"]).count == 1)
        #expect(setup.secret(":1.2", of: smallPath) == Array("small".utf8))

        // Replacing it is done off the loop too (LargeItemUpdate), and keeps the item.
        var replaced: Result<DBusValue, SecretServiceError>?
        let other = Self.large.reversed().map { $0 }
        setup.create(":1.1", ["kind": "large"], other) { replaced = $0 }
        #expect(replaced == nil && setup.deferred.pending.count == 1)
        setup.deferred.runNext()
        setup.deferred.runNext()
        #expect(replaced?.success?.tuple?.first?.objectPath == largePath, "\(String(describing: replaced))")
        #expect(setup.secret(":1.1", of: largePath) == other)
        #expect(setup.search(":1.2", ["kind": "large"]) == [largePath])

        // Each write off the loop has one audit entry, written in the write's own transaction.
        let largeID = try #require(Int64(largePath.split(separator: "/").last!))
        let entries = try setup.daemon.keyring.store.readAudit(since: 0) { setup.daemon.keyring.held($0.id) }.entries.filter { $0.itemID == largeID }
        #expect(entries.map(\.event) == [.create, .change], "\(entries.map(\.event))")
    }

    /// `SetSecret` as `client` on the item at `path`; `answer` is set when it is answered.
    private func setSecret(_ setup: Setup, _ client: String, _ path: String, _ secret: [UInt8], answer: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        let value: DBusValue = .tuple([.objectPath(setup.sessions[client]!), .bytes(DBusBytes([])), .bytes(DBusBytes(secret)), .string("application/octet-stream")])
        setup.daemon.router.handle(MethodCall(sender: client, path: path, interface: Introspection.item, method: "SetSecret", arguments: [value])) {
            answer($0)
            _ = setup.daemon.commitPending()
        }
    }

    @Test("a large secret set on an item is sealed and written off the loop; the item keeps its label and attributes; one written by another client meanwhile is updated again on the loop, losing neither write")
    func setSecretOffTheLoop() throws {
        let setup = try Setup()
        defer { setup.remove() }
        var created: Result<DBusValue, SecretServiceError>?
        setup.create(":1.1", ["kind": "set"], Array("small".utf8)) { created = $0 }
        let path = try #require(created?.success?.tuple?.first?.objectPath)

        var answer: Result<DBusValue, SecretServiceError>?
        setSecret(setup, ":1.1", path, Self.large) { answer = $0 }
        #expect(answer == nil && setup.deferred.pending.count == 1, "read and sealed off the loop")
        #expect(setup.secret(":1.2", of: path) == Array("small".utf8), "others read the old secret meanwhile")
        setup.deferred.runNext()
        #expect(answer == nil && setup.deferred.pending.count == 1, "sealed; written off the loop")
        setup.deferred.runNext()
        #expect(answer?.success == .tuple([]), "\(String(describing: answer))")
        #expect(setup.secret(":1.2", of: path) == Self.large)
        #expect(setup.search(":1.2", ["kind": "set"]) == [path])
        #expect(setup.daemon.router.property("Label", interface: Introspection.item, path: path, sender: ":1.2").success == .string("Large"))

        // Another client writes the label after the row was read and sealed, before it is written.
        answer = nil
        let again = Self.large.reversed().map { $0 }
        setSecret(setup, ":1.1", path, again) { answer = $0 }
        setup.deferred.runNext()
        #expect(setup.daemon.router.setProperty("Label", interface: Introspection.item, path: path, value: .string("Renamed"), sender: ":1.2") == nil)
        _ = setup.daemon.commitPending()
        setup.deferred.runNext()
        #expect(answer?.success == .tuple([]), "\(String(describing: answer))")
        #expect(setup.secret(":1.2", of: path) == again)
        #expect(setup.daemon.router.property("Label", interface: Introspection.item, path: path, sender: ":1.2").success == .string("Renamed"))

        // A secret that cannot be decoded is refused and changes nothing.
        answer = nil
        let broken: DBusValue = .tuple([.objectPath(setup.sessions[":1.1"]!), .bytes(DBusBytes([1])), .bytes(DBusBytes(Self.large)), .string("text/plain")])
        setup.daemon.router.handle(MethodCall(sender: ":1.1", path: path, interface: Introspection.item, method: "SetSecret", arguments: [broken])) { answer = $0 }
        while !setup.deferred.pending.isEmpty { setup.deferred.runNext() }
        #expect(answer?.failure == .invalidArgs("a plain session takes no secret parameters"))
        #expect(setup.secret(":1.2", of: path) == again)
    }

    @Test("locked while its item is sealed: the reply says so and nothing is stored; locked and unlocked again: stored all the same, sealed again with the new keys")
    func lockedMeanwhile() throws {
        let setup = try Setup()
        defer { setup.remove() }
        var answer: Result<DBusValue, SecretServiceError>?
        setup.create(":1.1", ["kind": "large"], Self.large) { answer = $0 }
        _ = try setup.call(":1.2", Fixture.service, Introspection.service, "Lock", [.objectPaths([Fixture.login])])?.get()
        setup.deferred.runNext()
        #expect(answer?.failure == .isLocked("the keyring is locked"))
        _ = try setup.daemon.unlockLogin(password: SecureBytes(Array("right".utf8)))
        #expect(setup.search(":1.1", ["kind": "large"]).isEmpty)

        answer = nil
        setup.create(":1.1", ["kind": "large"], Self.large) { answer = $0 }
        _ = try setup.call(":1.2", Fixture.service, Introspection.service, "Lock", [.objectPaths([Fixture.login])])?.get()
        _ = try setup.daemon.unlockLogin(password: SecureBytes(Array("right".utf8)))
        setup.deferred.runNext()
        let path = try #require(answer?.success?.tuple?.first?.objectPath)
        #expect(setup.secret(":1.1", of: path) == Self.large)
        #expect(setup.search(":1.1", ["kind": "large"]) == [path])
    }

    @Test("large items are sealed one at a time and written one at a time, in the order they came: the next is sealed while one is written, and checked and written only once that write has ended")
    func oneAtATime() throws {
        let setup = try Setup()
        defer { setup.remove() }
        var answers: [Int: String] = [:]
        var foundAtOnce: [Int: [String]] = [:]
        for index in 0..<3 {
            setup.create(":1.1", ["kind": "large", "n": "\(index)"], Self.large + [UInt8(index)]) {
                answers[index] = $0.success?.tuple?.first?.objectPath
                // As the client's next call would, before anything ends the main connection's group.
                foundAtOnce[index] = setup.searchLeavingGroupOpen(":1.1", ["n": "\(index)"])
            }
        }
        #expect(setup.deferred.pending.count == 1 && answers.isEmpty)
        setup.deferred.runNext()  // the first sealed: written, and the second sealed meanwhile
        #expect(answers.isEmpty && setup.deferred.pending.count == 2)
        // The second seal ends before the first write: it waits for that write to end.
        let (work, done) = setup.deferred.pending.remove(at: 1)
        work()
        done()
        #expect(answers.isEmpty && setup.deferred.pending.count == 1, "the second is not written while the first is")
        // A read snapshot begun before the write (nothing commits it here) is let go of
        // when the write is heard of, so the writer finds its item at once.
        _ = setup.searchLeavingGroupOpen(":1.2", ["kind": "large"])
        setup.deferred.runNext()  // the first written
        #expect(answers.count == 1 && setup.deferred.pending.count == 2, "then the second write, and the third seal")
        _ = setup.searchLeavingGroupOpen(":1.2", ["kind": "large"])
        setup.deferred.runNext()  // the second written
        #expect(answers.count == 2 && setup.deferred.pending.count == 1)
        setup.deferred.runNext()  // the third sealed
        #expect(answers.count == 2 && setup.deferred.pending.count == 1)
        _ = setup.searchLeavingGroupOpen(":1.2", ["kind": "large"])
        setup.deferred.runNext()  // and written
        #expect(answers.count == 3 && setup.deferred.pending.isEmpty)
        for index in 0..<3 {
            #expect(foundAtOnce[index] == [answers[index]].compactMap { $0 }, "the writer finds its item at once")
        }
        for index in 0..<3 {
            let path = try #require(answers[index])
            #expect(setup.secret(":1.1", of: path) == Self.large + [UInt8(index)])
        }
    }

    @Test("while a large item's write holds the database's write lock, another client's write does not wait for it: its call is answered waitForWrite (not sent; the server runs it again), nothing is written, and it goes through once the write has ended")
    func writesMeetingTheLargeWrite() throws {
        let setup = try Setup()
        defer { setup.remove() }
        var large: Result<DBusValue, SecretServiceError>?
        setup.create(":1.1", ["kind": "large"], Self.large) { large = $0 }
        setup.deferred.runNext()  // sealed; its write waits off the loop
        #expect(setup.daemon.keyring.apartWrites.isWriting)
        var ended = false
        setup.daemon.router.whenWritesEnd { ended = true }
        #expect(!ended)

        // The write lock, held as the apart writer holds it while it copies the item's pages.
        let holder = try Database(path: setup.daemon.keyring.store.databaseURL.path)
        try holder.run("BEGIN IMMEDIATE")
        var small: Result<DBusValue, SecretServiceError>?
        setup.create(":1.2", ["kind": "small"], Array("small".utf8)) { small = $0 }
        #expect(small?.failure == .waitForWrite)
        let alias = setup.call(":1.2", Fixture.service, Introspection.service, "ReadAlias", [.string("default")])
        #expect(alias?.success?.tuple?.first?.objectPath == Fixture.login, "a call that only reads goes on")
        try holder.run("ROLLBACK")
        holder.close()
        #expect(setup.search(":1.2", ["kind": "small"]).isEmpty, "nothing of it was written")

        setup.deferred.runNext()  // the large item written
        #expect(ended && !setup.daemon.keyring.apartWrites.isWriting)
        #expect(large?.success != nil, "\(String(describing: large))")
        // Run again, as the server does: written now, and the lock waits as before.
        setup.create(":1.2", ["kind": "small"], Array("small".utf8)) { small = $0 }
        let path = try #require(small?.success?.tuple?.first?.objectPath)
        #expect(setup.secret(":1.2", of: path) == Array("small".utf8))
    }

    @Test("while a large item's write holds the write lock, Properties.Set of another item's label is answered waitForWrite too (run again by the server), changes nothing, and goes through once the write has ended")
    func propertySetMeetingTheLargeWrite() throws {
        let setup = try Setup()
        defer { setup.remove() }
        var small: Result<DBusValue, SecretServiceError>?
        setup.create(":1.2", ["kind": "small"], Array("small".utf8)) { small = $0 }
        let item = try #require(small?.success?.tuple?.first?.objectPath)
        func label() -> String? {
            setup.daemon.router.property("Label", interface: Introspection.item, path: item, sender: ":1.2").success?.string
        }
        setup.create(":1.1", ["kind": "large"], Self.large) { _ in }
        setup.deferred.runNext()  // sealed; its write waits off the loop
        #expect(setup.daemon.keyring.apartWrites.isWriting)

        let holder = try Database(path: setup.daemon.keyring.store.databaseURL.path)
        try holder.run("BEGIN IMMEDIATE")
        let refused = setup.daemon.router.setProperty(
            "Label", interface: Introspection.item, path: item, value: .string("Renamed"), sender: ":1.2")
        #expect(refused == .waitForWrite)
        try holder.run("ROLLBACK")
        holder.close()
        _ = setup.daemon.commitPending()
        #expect(label() == "Large", "nothing of it was written")

        setup.deferred.runNext()  // the large item written
        #expect(!setup.daemon.keyring.apartWrites.isWriting)
        let set = setup.daemon.router.setProperty(
            "Label", interface: Introspection.item, path: item, value: .string("Renamed"), sender: ":1.2")
        #expect(set == nil)
        _ = setup.daemon.commitPending()
        #expect(label() == "Renamed")
    }

    @Test("while a large item's write holds the write lock, what follows a key derivation on the loop (here a new keyring's creation) waits for it to end rather than hold the loop on the lock, then goes through")
    func derivationMeetingTheLargeWrite() throws {
        let setup = try Setup()
        defer { setup.remove() }
        setup.create(":1.1", ["kind": "large"], Self.large) { _ in }
        setup.deferred.runNext()  // sealed; its write waits off the loop
        #expect(setup.daemon.keyring.apartWrites.isWriting)

        let password: DBusValue = .tuple([
            .objectPath(setup.sessions[":1.2"]!), .bytes(DBusBytes([])), .bytes(DBusBytes(Array("new-pass".utf8))), .string("text/plain"),
        ])
        let create = MethodCall(
            sender: ":1.2", path: Fixture.service, interface: Introspection.gnomeExtension, method: "CreateWithMasterPassword",
            arguments: [.properties([SecretServiceNames.Property.collectionLabel: .string("Other")]), password])
        var created: Result<DBusValue, SecretServiceError>?
        setup.daemon.router.handle(create) { created = $0 }
        #expect(setup.deferred.pending.count == 2, "the large write, then the new keyring's derivation")

        // The write lock, held as the apart writer holds it; the derivation ends first.
        let holder = try Database(path: setup.daemon.keyring.store.databaseURL.path)
        try holder.run("BEGIN IMMEDIATE")
        let started = Date()
        let (derive, derived) = setup.deferred.pending.remove(at: 1)
        derive()
        derived()
        #expect(Date().timeIntervalSince(started) < 2, "the loop waited on the lock")
        #expect(created == nil, "it waits for the write to end")
        try holder.run("ROLLBACK")
        holder.close()
        #expect((try setup.daemon.keyring.collections()).allSatisfy { $0.label != "Other" })

        setup.deferred.runNext()  // the large item written: the creation goes on
        #expect(!setup.daemon.keyring.apartWrites.isWriting)
        _ = setup.daemon.commitPending()
        #expect(created?.success != nil, "\(String(describing: created))")
        #expect((try setup.daemon.keyring.collections()).contains { $0.label == "Other" })
    }
}

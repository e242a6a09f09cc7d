import DBusValues
import Foundation
import KeychainCore
@testable import SecretCrypto
@testable import SecretService
@testable import SecretStore
import Testing

/// `Import1.ImportItems` of a batch of 32 KiB or more (``ItemBatchWrite``): planned on the loop,
/// sealed and written off it in one transaction of the store's second connection, published
/// back on it; with the same outcome as a small batch stored on the loop. In this process, with
/// the off-loop work kept until the test runs it (``LargeItemSealingTests/Setup``).
@Suite struct ImportBatchTests {
    typealias Setup = LargeItemSealingTests.Setup
    typealias Fixture = InProcessDaemonTests.Fixture

    /// A secret of about 400 bytes, different for each `n` and `version`: a hundred items make
    /// a batch over ``SealingQueue/threshold``.
    static func secret(_ n: Int, version: Int) -> [UInt8] {
        Array("secret \(n) version \(version) ".utf8) + [UInt8](repeating: UInt8(truncatingIfNeeded: n &+ version), count: 380)
    }

    /// An item of a batch: attributes `kind = batch`, `n = n`.
    static func item(_ n: Int, _ secret: [UInt8], session: String, label: String? = nil, parameters: [UInt8] = []) -> DBusValue {
        .tuple([
            .properties([
                SecretServiceNames.Property.itemLabel: .string(label ?? "item \(n)"),
                SecretServiceNames.Property.itemAttributes: .stringMap(["kind": "batch", "n": "\(n)"]),
            ]),
            .tuple([.objectPath(session), .bytes(DBusBytes(parameters)), .bytes(DBusBytes(secret)), .string("text/plain")]),
        ])
    }

    /// Sends `ImportItems` (into the default keyring) as `client`; `answer` is set when it is answered.
    static func importItems(_ setup: Setup, _ client: String, _ items: [DBusValue], replace: Bool,
                            answer: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        let call = MethodCall(
            sender: client, path: SecretServiceNames.Path.service, interface: SecretServiceNames.Interface.importing, method: "ImportItems",
            arguments: [.string(""), .boolean(replace), .array(element: "(a{sv}(oayays))", items)])
        setup.daemon.router.handle(call) {
            answer($0)
            _ = setup.daemon.commitPending()
        }
    }

    /// Sends `ImportPackedItems` (into the default keyring) as `client`, the items `(n, secret)`
    /// packed for `session` (attributes `kind = batch`, `n = n`; none for a negative `n`), or
    /// `packed` as it is; `answer` is set when it is answered.
    static func importPacked(_ setup: Setup, _ client: String, _ items: [(n: Int, secret: [UInt8])], session: String,
                             packed: DBusBytes? = nil, answer: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        let writer = PackedItems.Writer(sessionPath: session)
        for (n, secret) in items {
            secret.withUnsafeBytes { value in
                writer.append(label: "item \(n)", attributes: n < 0 ? [:] : ["kind": "batch", "n": "\(n)"],
                              parameters: UnsafeRawBufferPointer(start: nil, count: 0), value: value, contentType: "text/plain")
            }
        }
        let call = MethodCall(
            sender: client, path: SecretServiceNames.Path.service, interface: SecretServiceNames.Interface.importing,
            method: "ImportPackedItems", arguments: [.string(""), .boolean(false), .bytes(packed ?? writer.finish())])
        setup.daemon.router.handle(call) {
            answer($0)
            _ = setup.daemon.commitPending()
        }
    }

    /// The secret of the item `n`, read by `client` (nil: no such item, or more than one).
    static func secret(_ setup: Setup, _ client: String, item n: Int) -> [UInt8]? {
        let found = setup.search(client, ["kind": "batch", "n": "\(n)"])
        guard found.count == 1 else { return nil }
        return setup.secret(client, of: found[0])
    }

    /// How many entries of `event` the audit trail holds, read through the main connection.
    static func auditEntries(_ setup: Setup, _ event: Store.AuditEntry.Event) throws -> Int {
        try setup.daemon.keyring.store.readAudit(since: 0) { setup.daemon.keyring.held($0.id) }.entries.filter { $0.event == event }.count
    }

    @Test("a large batch is sealed and written off the loop: others are answered meanwhile and see none of it until it is written; then every item reads back, and an item there already or twice in the batch is skipped, or replaced with replace, as on the loop")
    func offTheLoop() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        var first: Result<DBusValue, SecretServiceError>?
        Self.importItems(setup, ":1.1", [Self.item(0, Self.secret(0, version: 0), session: session)], replace: false) { first = $0 }
        #expect(first?.success == .tuple([.uint32(1), .uint32(0), .uint32(0)]), "a small batch is stored at once, on the loop")

        var answer: Result<DBusValue, SecretServiceError>?
        let batch = (0..<100).map { Self.item($0, Self.secret($0, version: 1), session: session) }
            + [Self.item(5, Self.secret(5, version: 2), session: session)]
        Self.importItems(setup, ":1.1", batch, replace: false, answer: { answer = $0 })
        setup.deferred.runTurns()
        #expect(answer == nil && setup.deferred.pending.count == 1, "sealed off the loop")
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 1, "another client is answered meanwhile, and sees none of the batch")
        setup.deferred.runNext()
        #expect(answer == nil && setup.deferred.pending.count == 1, "sealed; written off the loop")
        setup.deferred.runNext()
        setup.deferred.runTurns()
        #expect(answer?.success == .tuple([.uint32(99), .uint32(0), .uint32(2)]), "\(String(describing: answer))")
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 100)
        #expect(Self.secret(setup, ":1.2", item: 0) == Self.secret(0, version: 0), "there already: skipped")
        #expect(Self.secret(setup, ":1.2", item: 5) == Self.secret(5, version: 1), "the batch's second item 5 is skipped")
        #expect(Self.secret(setup, ":1.2", item: 99) == Self.secret(99, version: 1))

        // With replace: every item gets the new secret, the batch's last item 5 wins.
        answer = nil
        let again = (0..<100).map { Self.item($0, Self.secret($0, version: 3), session: session, label: "again \($0)") }
            + [Self.item(5, Self.secret(5, version: 4), session: session)]
        Self.importItems(setup, ":1.1", again, replace: true, answer: { answer = $0 })
        setup.deferred.runAll()
        #expect(answer?.success == .tuple([.uint32(0), .uint32(101), .uint32(0)]), "\(String(describing: answer))")
        #expect(try Self.auditEntries(setup, .change) == 100, "one entry for each item written (item 5 once)")
        #expect(try Self.auditEntries(setup, .create) == 100)
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 100)
        #expect(Self.secret(setup, ":1.2", item: 0) == Self.secret(0, version: 3))
        #expect(Self.secret(setup, ":1.2", item: 5) == Self.secret(5, version: 4))
        #expect(Self.secret(setup, ":1.2", item: 42) == Self.secret(42, version: 3))
        let path = setup.search(":1.2", ["kind": "batch", "n": "42"])[0]
        #expect(setup.daemon.router.property("Label", interface: Introspection.item, path: path, sender: ":1.2").success == .string("again 42"))
    }

    @Test("ImportPackedItems stores a batch as ImportItems does, a small one on the loop, a large one off it; bytes that are not a packed batch, another client's session or one bad item refuse it whole and write nothing")
    func packed() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        var answer: Result<DBusValue, SecretServiceError>?
        Self.importPacked(setup, ":1.1", [(0, Self.secret(0, version: 0))], session: session) { answer = $0 }
        #expect(answer?.success == .tuple([.uint32(1), .uint32(0), .uint32(0)]), "a small batch is stored at once, on the loop")

        answer = nil
        let batch = (0..<100).map { ($0, Self.secret($0, version: 1)) } + [(5, Self.secret(5, version: 2))]
        Self.importPacked(setup, ":1.1", batch, session: session) { answer = $0 }
        setup.deferred.runTurns()
        #expect(answer == nil && setup.deferred.pending.count == 1, "sealed off the loop")
        setup.deferred.runAll()
        #expect(answer?.success == .tuple([.uint32(99), .uint32(0), .uint32(2)]), "\(String(describing: answer))")
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 100)
        #expect(Self.secret(setup, ":1.2", item: 0) == Self.secret(0, version: 0), "there already: skipped")
        #expect(Self.secret(setup, ":1.2", item: 5) == Self.secret(5, version: 1), "twice in the batch: the first kept")
        #expect(Self.secret(setup, ":1.2", item: 99) == Self.secret(99, version: 1))
        let created = try setup.daemon.keyring.store.readAudit(since: 0) { setup.daemon.keyring.held($0.id) }.entries.filter { $0.event == .create }
        #expect(created.count == 100 && Set(created.map(\.identity)).count == 1, "the batch written off the loop names its client, as the one on the loop does")
        #expect(created.last?.identity != "secretd" && created.last?.pid != nil, "\(String(describing: created.last))")

        let fresh = (200..<300).map { ($0, Self.secret($0, version: 1)) }
        let good = PackedItemsTests.pack([], session: session).array
        for (packed, refusal) in [
            (DBusBytes(good + [0]), SecretServiceError.invalidArgs(PackedItems.Malformed.trailingBytes.description)),
            (DBusBytes(Array(good.dropLast())), .invalidArgs(PackedItems.Malformed.truncated.description)),
        ] {
            answer = nil
            Self.importPacked(setup, ":1.1", fresh, session: session, packed: packed) { answer = $0 }
            setup.deferred.runAll()
            #expect(answer?.failure == refusal)
        }
        answer = nil
        Self.importPacked(setup, ":1.1", fresh, session: setup.sessions[":1.2"]!) { answer = $0 }
        setup.deferred.runAll()
        #expect(answer?.failure == .noSession("the session \(setup.sessions[":1.2"]!) does not exist"), "another client's session")
        answer = nil
        Self.importPacked(setup, ":1.1", fresh + [(-1, Self.secret(0, version: 3))], session: session) { answer = $0 }
        setup.deferred.runAll()
        #expect(answer?.failure == .invalidArgs("an item needs attributes"))
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 100, "nothing of the refused calls")
    }

    @Test("ReadPackedItems answers what ReadItems does, packed: the same items in the same order, locked ones without contents, with and without secrets; too many paths or another client's session are refused")
    func readPacked() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        var answer: Result<DBusValue, SecretServiceError>?
        Self.importPacked(setup, ":1.1", (0..<20).map { ($0, Self.secret($0, version: 0)) }, session: session) { answer = $0 }
        setup.deferred.runAll()
        #expect(answer?.success == .tuple([.uint32(20), .uint32(0), .uint32(0)]))
        let paths = setup.search(":1.1", ["kind": "batch"]) + ["/org/freedesktop/secrets/collection/login/999999"]
        func call(_ method: String, _ sessionPath: String, _ paths: [String] = paths) throws -> Result<DBusValue, SecretServiceError>? {
            try setup.call(":1.1", Fixture.service, SecretServiceNames.Interface.importing, method, [.objectPaths(paths), .objectPath(sessionPath)])
        }
        func entries(_ value: DBusValue?) -> [DBusValue.Entry]? {
            guard case .dictionary(_, _, let entries) = value else { return nil }
            return entries
        }
        for sessionPath in [session, "/"] {
            let values = try #require(entries(try call("ReadItems", sessionPath)?.success?.tuple?.first))
            let packed = try #require(try call("ReadPackedItems", sessionPath)?.success?.tuple?.first?.bytes)
            let (packedSession, items) = try PackedItems.unpackRead(packed)
            #expect(packedSession == sessionPath && items.count == 20 && values.count == 20)
            for (entry, item) in zip(values, items) {
                let properties = try #require(entry.value.variantMap)
                #expect(entry.key.objectPath == item.path && properties["Label"]?.string == item.label)
                #expect(properties["Attributes"]?.stringMap == item.attributes && properties["Locked"] == .boolean(item.isLocked))
                #expect(properties["Created"] == .uint64(item.created) && properties["Modified"] == .uint64(item.modified))
                let secret = properties["Secret"]?.tuple
                #expect(secret?[2].bytes == item.secret?.value && secret?[1].bytes == item.secret?.parameters)
                #expect((secret == nil) == (sessionPath == "/"))
            }
            #expect(items.map(\.secret?.value.array) == (sessionPath == "/" ? Array(repeating: nil, count: 20) : items.map { Self.secret(Int($0.attributes["n"]!)!, version: 0) }))
        }
        _ = try setup.call(":1.2", Fixture.service, Introspection.service, "Lock", [.objectPaths([Fixture.login])])?.get()
        let locked = try PackedItems.unpackRead(try #require(try call("ReadPackedItems", session)?.success?.tuple?.first?.bytes)).items
        #expect(locked.count == 20 && locked.allSatisfy { $0.isLocked && $0.label.isEmpty && $0.attributes.isEmpty && $0.secret == nil })
        #expect(try call("ReadPackedItems", setup.sessions[":1.2"]!)?.failure == .noSession("the session \(setup.sessions[":1.2"]!) does not exist"))
        let tooMany = Array(repeating: paths[0], count: ImportObject.readLimit + 1)
        #expect(try call("ReadPackedItems", "/", tooMany)?.failure == .limitsExceeded("at most \(ImportObject.readLimit) items a call"))
    }

    @Test("a large batch with one secret that cannot be decoded is refused whole; locked while it is sealed, it is refused; nothing of either is written")
    func refusedWhole() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        var answer: Result<DBusValue, SecretServiceError>?
        let broken = (0..<99).map { Self.item($0, Self.secret($0, version: 1), session: session) }
            + [Self.item(99, Self.secret(99, version: 1), session: session, parameters: [1])]
        Self.importItems(setup, ":1.1", broken, replace: false, answer: { answer = $0 })
        setup.deferred.runAll()
        #expect(answer?.failure == .invalidArgs("a plain session takes no secret parameters"))
        #expect(setup.search(":1.2", ["kind": "batch"]).isEmpty)

        answer = nil
        let batch = (0..<100).map { Self.item($0, Self.secret($0, version: 1), session: session) }
        Self.importItems(setup, ":1.1", batch, replace: false, answer: { answer = $0 })
        _ = try setup.call(":1.2", Fixture.service, Introspection.service, "Lock", [.objectPaths([Fixture.login])])?.get()
        setup.deferred.runAll()
        #expect(answer?.failure == .isLocked("the keyring is locked"))
        _ = try setup.daemon.unlockLogin(password: SecureBytes(Array("right".utf8)))
        #expect(setup.search(":1.2", ["kind": "batch"]).isEmpty)
    }

    @Test("a large batch that would take its program past quota-items is refused whole, in its own transaction")
    func overQuota() throws {
        var configuration = Configuration()
        configuration.quota = Store.Quota(items: 150, bytes: 1 << 30, databaseBytes: 1 << 40)
        let setup = try Setup(configuration: configuration)
        defer { setup.remove() }
        setup.daemon.callers.add(Caller(identity: CallerIdentity(kind: .exe, name: "/usr/bin/importer"), pid: getpid()), as: ":1.1")
        let session = setup.sessions[":1.1"]!
        var answer: Result<DBusValue, SecretServiceError>?
        Self.importItems(setup, ":1.1", (0..<100).map { Self.item($0, Self.secret($0, version: 1), session: session) }, replace: false) { answer = $0 }
        setup.deferred.runAll()
        #expect(answer?.success == .tuple([.uint32(100), .uint32(0), .uint32(0)]), "\(String(describing: answer))")

        answer = nil
        Self.importItems(setup, ":1.1", (100..<200).map { Self.item($0, Self.secret($0, version: 1), session: session) }, replace: false) { answer = $0 }
        setup.deferred.runAll()
        #expect(answer?.failure?.message.contains("quota-items = 150") == true, "\(String(describing: answer))")
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 100)
        #expect(try setup.daemon.keyring.store.usage(of: "exe:/usr/bin/importer").items == 100)
    }

    @Test("an item the batch replaces, given other attributes by another client after it was read: the batch is stored again on the loop, over what is there then (that item no longer matches, so a new one is made), and the index stays true")
    func writtenMeanwhile() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        var answer: Result<DBusValue, SecretServiceError>?
        Self.importItems(setup, ":1.1", (0..<100).map { Self.item($0, Self.secret($0, version: 1), session: session) }, replace: false) { answer = $0 }
        setup.deferred.runAll()
        #expect(answer?.success == .tuple([.uint32(100), .uint32(0), .uint32(0)]))

        answer = nil
        Self.importItems(setup, ":1.1", (0..<100).map { Self.item($0, Self.secret($0, version: 2), session: session) }, replace: true) { answer = $0 }
        setup.deferred.runTurns()  // planned
        setup.deferred.runNext()  // sealed
        let path = setup.search(":1.2", ["kind": "batch", "n": "3"])[0]
        let changed = setup.daemon.router.setProperty(
            "Attributes", interface: Introspection.item, path: path, value: .stringMap(["kind": "batch", "n": "3", "extra": "x"]), sender: ":1.2")
        #expect(changed == nil)
        _ = setup.daemon.commitPending()
        setup.deferred.runAll()  // refused, as item 3 changed; stored on the loop
        #expect(answer?.success == .tuple([.uint32(1), .uint32(99), .uint32(0)]), "\(String(describing: answer))")
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 101)
        #expect(setup.search(":1.2", ["extra": "x"]) == [path])
        #expect(setup.secret(":1.2", of: path) == Self.secret(3, version: 1), "the item changed meanwhile keeps its secret")
        #expect(Self.secret(setup, ":1.2", item: 77) == Self.secret(77, version: 2))
    }
}

extension ImportBatchTests {
    @Test("a batch of more items than a turn takes is read and planned, and published, a few hundred items a turn of the loop, with other clients served between turns; answered once all is published; locked between turns, or with a bad item in a later turn, it is refused and nothing is written")
    func inTurns() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let session = setup.sessions[":1.1"]!
        let count = 2 * ItemBatchWrite.itemsPerTurn + 50
        var answer: Result<DBusValue, SecretServiceError>?
        Self.importItems(setup, ":1.1", (0..<count).map { Self.item($0, Self.secret($0, version: 1), session: session) }, replace: false) { answer = $0 }
        #expect(setup.deferred.turns.count == 1 && setup.deferred.pending.isEmpty, "one turn planned, the next waits")
        #expect(setup.search(":1.2", ["kind": "batch"]).isEmpty, "another client is served between turns")
        setup.deferred.runTurn()
        #expect(setup.deferred.turns.count == 1 && setup.deferred.pending.isEmpty)
        setup.deferred.runTurn()
        #expect(setup.deferred.turns.isEmpty && setup.deferred.pending.count == 1, "planned; sealed off the loop")
        setup.deferred.runNext()
        setup.deferred.runNext()
        #expect(answer == nil && setup.deferred.turns.count == 1, "written; the first turn of it published, the rest waits")
        #expect(setup.daemon.keyring.apartWrites.isWriting, "until it is all published, the write is in progress")
        #expect(setup.search(":1.2", ["kind": "batch"]).count == count, "all of it is there")
        #expect(try Self.auditEntries(setup, .create) == count, "each item's audit entry was written with it, before its event is published")
        setup.deferred.runTurn()
        #expect(answer == nil)
        setup.deferred.runTurn()
        #expect(answer?.success == .tuple([.uint32(UInt32(count)), .uint32(0), .uint32(0)]), "\(String(describing: answer))")
        #expect(!setup.daemon.keyring.apartWrites.isWriting && setup.deferred.turns.isEmpty && setup.deferred.pending.isEmpty)
        #expect(Self.secret(setup, ":1.2", item: count - 1) == Self.secret(count - 1, version: 1))
        #expect(try Self.auditEntries(setup, .create) == count, "and not again when it was published")

        // Locked between two turns of its plan: refused, nothing written.
        answer = nil
        Self.importItems(setup, ":1.1", (count..<(2 * count)).map { Self.item($0, Self.secret($0, version: 1), session: session) }, replace: false) { answer = $0 }
        _ = try setup.call(":1.2", Fixture.service, Introspection.service, "Lock", [.objectPaths([Fixture.login])])?.get()
        setup.deferred.runTurn()
        #expect(answer?.failure == .isLocked("the keyring is locked"), "\(String(describing: answer))")
        #expect(setup.deferred.turns.isEmpty && setup.deferred.pending.isEmpty)
        _ = try setup.daemon.unlockLogin(password: SecureBytes(Array("right".utf8)))
        #expect(setup.search(":1.2", ["kind": "batch"]).count == count)

        // An item of a later turn that is refused refuses the batch: nothing is written.
        answer = nil
        var items = (count..<(2 * count)).map { Self.item($0, Self.secret($0, version: 1), session: session) }
        items[ItemBatchWrite.itemsPerTurn + 10] = .tuple([
            .properties([SecretServiceNames.Property.itemLabel: .string("no attributes")]),
            .tuple([.objectPath(session), .bytes(DBusBytes([])), .bytes(DBusBytes([1])), .string("text/plain")]),
        ])
        Self.importItems(setup, ":1.1", items, replace: false) { answer = $0 }
        while !setup.deferred.turns.isEmpty { setup.deferred.runTurn() }
        #expect(answer?.failure == .invalidArgs("an item needs attributes"), "\(String(describing: answer))")
        #expect(setup.deferred.pending.isEmpty && !setup.daemon.keyring.apartWrites.isWriting)
        #expect(setup.search(":1.2", ["kind": "batch"]).count == count)
    }

    @Test("batches in flight at once (planned, not yet written): one with an item of another waits until it has ended and is then planned anew, as a small batch written at once and CreateItem with replace do; each item is made once, skip and replace see the batch before, and the audit trail names who waited")
    func inFlight() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let batch = { (client: String, numbers: Range<Int>, version: Int) in
            numbers.map { Self.item($0, Self.secret($0, version: version), session: setup.sessions[client]!) }
        }
        var first, overlapping, small, apart: Result<DBusValue, SecretServiceError>?
        Self.importItems(setup, ":1.1", batch(":1.1", 0..<100, 1), replace: false) { first = $0 }
        setup.deferred.runTurns()
        #expect(setup.deferred.pending.count == 1 && setup.daemon.batchesInFlight.count == 1, "planned, being sealed")

        // Items 50-99 are the first batch's, not yet written: the store does not show them.
        Self.importItems(setup, ":1.2", batch(":1.2", 50..<150, 2), replace: false) { overlapping = $0 }
        setup.deferred.runTurns()
        #expect(overlapping == nil && setup.deferred.pending.count == 1, "it gave its plan up and waits")
        Self.importItems(setup, ":1.2", batch(":1.2", 0..<1, 3), replace: true) { small = $0 }
        #expect(small == nil, "a small batch with one of its items waits too")
        var created: Result<DBusValue, SecretServiceError>?
        setup.create(":1.2", ["kind": "batch", "n": "10"], Array("made by CreateItem".utf8)) { created = $0 }
        #expect(created == nil, "so does CreateItem with replace")
        Self.importItems(setup, ":1.1", batch(":1.1", 200..<300, 4), replace: false) { apart = $0 }
        setup.deferred.runTurns()
        #expect(apart == nil && setup.daemon.batchesInFlight.count == 2, "a batch that shares no item is planned meanwhile")

        setup.deferred.runAll()
        #expect(first?.success == .tuple([.uint32(100), .uint32(0), .uint32(0)]), "\(String(describing: first))")
        #expect(overlapping?.success == .tuple([.uint32(50), .uint32(0), .uint32(50)]), "\(String(describing: overlapping))")
        #expect(small?.success == .tuple([.uint32(0), .uint32(1), .uint32(0)]), "\(String(describing: small))")
        #expect(created?.success?.tuple?.first?.objectPath == setup.search(":1.2", ["kind": "batch", "n": "10"]).first)
        #expect(apart?.success == .tuple([.uint32(100), .uint32(0), .uint32(0)]), "\(String(describing: apart))")
        #expect(setup.daemon.batchesInFlight.count == 0)
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 250, "each item once")
        #expect(Self.secret(setup, ":1.2", item: 0) == Self.secret(0, version: 3))
        #expect(Self.secret(setup, ":1.2", item: 75) == Self.secret(75, version: 1), "skipped: the first batch's")
        #expect(Self.secret(setup, ":1.2", item: 149) == Self.secret(149, version: 2))
        #expect(Self.secret(setup, ":1.2", item: 250) == Self.secret(250, version: 4))
        #expect(Self.secret(setup, ":1.2", item: 10) == Array("made by CreateItem".utf8))
        let written = try setup.daemon.keyring.store.readAudit(since: 0) { setup.daemon.keyring.held($0.id) }.entries
            .filter { $0.event == .create || $0.event == .change }
        #expect(written.count == 252 && written.allSatisfy { $0.identity != "secretd" }, "what waited names its client, not secretd")
    }

    @Test("a large CreateItem being sealed and written holds its item as a batch does: a batch with that item waits for its answer and then skips it")
    func largeCreateHolds() throws {
        let setup = try Setup()
        defer { setup.remove() }
        var created, batch: Result<DBusValue, SecretServiceError>?
        setup.create(":1.1", ["kind": "batch", "n": "7"], LargeItemSealingTests.large) { created = $0 }
        #expect(created == nil && setup.deferred.pending.count == 1, "being sealed")
        let items = (0..<100).map { Self.item($0, Self.secret($0, version: 1), session: setup.sessions[":1.2"]!) }
        Self.importItems(setup, ":1.2", items, replace: false) { batch = $0 }
        setup.deferred.runTurns()
        #expect(batch == nil && setup.daemon.batchesInFlight.count == 1, "the batch gave its plan up and waits")
        setup.deferred.runAll()
        #expect(created?.success != nil, "\(String(describing: created))")
        #expect(batch?.success == .tuple([.uint32(99), .uint32(0), .uint32(1)]), "\(String(describing: batch))")
        #expect(setup.search(":1.2", ["kind": "batch"]).count == 100)
        #expect(Self.secret(setup, ":1.2", item: 7) == LargeItemSealingTests.large)
        #expect(setup.daemon.batchesInFlight.count == 0)
    }
}

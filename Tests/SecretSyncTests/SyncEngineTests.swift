import Foundation
import KeychainTestSupport
import SecretCrypto
import SecretStore
import Testing

@testable import SecretSync

/// Three machines and a bare repository on a local path, each machine a clone with an in-memory
/// keyring standing for secretd's: joining with approval and a code, items created, changed and
/// deleted on each reaching the others, offline edits of one item converging to one winner with
/// the loser in history, refused files changing nothing, a removed device unable to read what
/// is written after its removal, and a remote that holds nothing readable.
@Suite struct SyncEngineTests {
    /// One machine: its clone, its vault state, its items (by sync id) and their history.
    final class Machine {
        let git: SyncGit
        var vault: SyncVault
        var items: [String: SyncItem] = [:]
        var history: [String: [SyncItem]] = [:]
        var changes: [(header: SyncHeader, item: SyncItem?)] = []
        var refused: [SyncError] = []
        var filesRead = 0
        let wall: Wall

        final class Wall: @unchecked Sendable { var now: UInt64 = 1_796_000_000_000 }

        init(git: SyncGit, vault: SyncVault, wall: Wall) {
            self.git = git
            self.vault = vault
            self.wall = wall
        }

        /// A local write, stamped now; returns the item's id.
        @discardableResult
        func set(_ id: String?, label: String, secret: String) -> String {
            let header = vault.stamp(item: id, deleted: false)
            let item = SyncItem(
                contents: ItemContents(label: label, attributes: ["service": "svc", "account": label],
                                       secret: SecureBytes(Array(secret.utf8)), contentType: "text/plain"),
                created: 1, modified: 2)
            items[header.fileName] = item
            changes.append((header, item))
            return header.fileName
        }

        func delete(_ id: String) {
            changes.append((vault.stamp(item: id, deleted: true), nil))
            items[id] = nil
        }

        func sync() throws {
            var copy = vault
            let report = try SyncEngine.round(on: git, vault: &copy, changes: changes) { [items] header in items[header.fileName] }
            vault = copy
            changes = []
            for header in report.replacedLocal { if let held = items[header.fileName] { history[header.fileName, default: []].append(held) } }
            for (header, item) in report.accepted { items[header.fileName] = item }
            for (header, item) in report.lostArrived { if let item { history[header.fileName, default: []].append(item) } }
            refused += report.refused
            filesRead = report.filesRead
        }

        func secret(_ id: String) -> String? {
            items[id].map { $0.contents.secret.withBytes { String(decoding: $0, as: UTF8.self) } }
        }
    }

    let root = FileManager.default.temporaryDirectory.appendingPathComponent("secretsync-engine-\(UUID().uuidString)")

    func remote() throws -> String {
        let remote = root.appendingPathComponent("remote.git")
        try FileManager.default.createDirectory(at: remote, withIntermediateDirectories: true)
        #expect(try CommandResult.run(["git", "init", "--quiet", "--bare", remote.path], environment: ["PATH": "/usr/bin:/bin"],
                                      scratch: root, timeout: 30).status == 0)
        return remote.path
    }

    func clone(_ name: String, _ remote: String) -> SyncGit { SyncGit(directory: root.appendingPathComponent(name), remote: remote) }

    func clock(_ wall: Machine.Wall) -> HybridLogicalClock { HybridLogicalClock(wallClock: { wall.now }) }

    /// A vault on `remote` made by a first machine, and `others` joined and approved by it.
    func machines(_ remote: String, others: [String]) throws -> [Machine] {
        let wall = Machine.Wall()
        let first = Machine(git: clone("laptop", remote), vault: try SyncEngine.create(
            on: clone("laptop", remote), identity: try SyncIdentity.generate(), clock: clock(wall)), wall: wall)
        var all = [first]
        for name in others {
            let wall = Machine.Wall()
            let git = clone(name, remote)
            let (vault, code) = try SyncEngine.join(on: git, identity: try SyncIdentity.generate(), clock: clock(wall))
            let waiting = try SyncEngine.pending(on: first.git, vault: first.vault)
            #expect(waiting.count == 1 && waiting[0].code == code, "the approving machine shows the joining one's code")
            try SyncEngine.approve(SyncIDs.hex(waiting[0].device.id), on: first.git, vault: first.vault)
            all.append(Machine(git: git, vault: vault, wall: wall))
        }
        return all
    }

    @Test("join with approval; items created, changed and deleted on each machine reach the others")
    func createChangeDelete() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let remote = try remote()
        let machines = try machines(remote, others: ["desktop", "server"])
        let (laptop, desktop, server) = (machines[0], machines[1], machines[2])
        // Before its approval is seen, a machine has no key; after its first round it has.
        for machine in machines { try machine.sync() }
        #expect(machines.allSatisfy { $0.vault.generation == 1 })

        let mail = laptop.set(nil, label: "mail", secret: "m1")
        let vpn = desktop.set(nil, label: "vpn", secret: "v1")
        try laptop.sync()
        try desktop.sync()   // its push is after the laptop's: refused once, merged, pushed
        try server.sync()
        try laptop.sync()
        for machine in machines {
            #expect(machine.secret(mail) == "m1" && machine.secret(vpn) == "v1")
        }
        server.set(mail, label: "mail", secret: "m2")
        try server.sync()
        // An edit of a version the machine held is no conflict: nothing of its own lost.
        #expect(server.history[mail] == nil, "\(String(describing: server.history[mail]))")
        desktop.delete(vpn)
        try desktop.sync()
        for machine in machines { try machine.sync() }
        for machine in machines {
            #expect(machine.secret(mail) == "m2")
            #expect(machine.items[vpn] == nil)
            #expect(machine.refused.isEmpty, "\(machine.refused)")
        }
    }

    @Test("the same item changed on two machines offline converges to one winner everywhere, the loser in history")
    func offlineConflict() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let remote = try remote()
        let machines = try machines(remote, others: ["desktop", "server"])
        let (laptop, desktop, server) = (machines[0], machines[1], machines[2])
        let token = laptop.set(nil, label: "token", secret: "t0")
        for machine in machines { try machine.sync() }
        // Offline: the laptop edits first, the desktop a second later; the laptop syncs first.
        laptop.set(token, label: "token", secret: "from laptop")
        desktop.wall.now += 1_000
        desktop.set(token, label: "token", secret: "from desktop")
        try laptop.sync()
        try desktop.sync()
        for machine in machines { try machine.sync() }
        for machine in machines {
            #expect(machine.secret(token) == "from desktop")
        }
        let laptopHistory = laptop.history[token]?.map { $0.contents.secret.withBytes { String(decoding: $0, as: UTF8.self) } }
        let desktopHistory = desktop.history[token]?.map { $0.contents.secret.withBytes { String(decoding: $0, as: UTF8.self) } }
        #expect(laptopHistory?.contains("from laptop") == true, "\(String(describing: laptopHistory))")
        #expect(desktopHistory?.contains("from laptop") == true, "\(String(describing: desktopHistory))")
        _ = server
    }

    @Test("a tampered, replayed or foreign file is refused and changes nothing; a removed device cannot read what comes after")
    func refusalsAndRemoval() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let remote = try remote()
        let machines = try machines(remote, others: ["desktop", "server"])
        let (laptop, desktop, server) = (machines[0], machines[1], machines[2])
        let note = laptop.set(nil, label: "note", secret: "n1")
        for machine in machines { try machine.sync() }
        let first = try #require(try laptop.git.files(in: "items")[note])
        laptop.set(note, label: "note", secret: "n2")
        try laptop.sync()
        for machine in machines { try machine.sync() }

        // The remote's host puts the first version back (a replay), alters a byte of another
        // file, renames one and adds one from another vault.
        let host = clone("host", remote)
        try host.synchronize()
        try host.write(first, to: "items/\(note)")
        let other = server.set(nil, label: "other", secret: "o1")
        try server.sync()
        try host.synchronize()
        var altered = try #require(host.files(in: "items")[other])
        altered[altered.count - 1] ^= 1
        try host.write(first, to: "items/\(note)")
        try host.write(altered, to: "items/\(other)")
        try host.write(first, to: "items/" + SyncIDs.hex(SyncIDs.random()))
        let foreign = try SyncRecord.seal(nil, header: SyncHeader(
            vault: SyncIDs.random(), item: SyncIDs.random(), timestamp: SyncTimestamp(milliseconds: 1), device: SyncIDs.random(),
            deleted: true, keyGeneration: 1), key: Gcrypt.randomKey())
        try host.write(foreign.bytes, to: "items/\(foreign.header.fileName)")
        #expect(try host.publish(message: "the host meddles") == .pushed)
        desktop.refused = []
        try desktop.sync()
        // Nothing changed: the note keeps its second version, and the altered item never arrived.
        #expect(desktop.secret(note) == "n2" && desktop.items[other] == nil && server.secret(other) == "o1")
        let reasons = desktop.refused.map { "\($0)" }.joined(separator: "\n")
        #expect(reasons.contains("replayed") && reasons.contains("altered") && reasons.contains("renamed")
                && reasons.contains("another vault"), "\(reasons)")
        // The machine that holds the altered item writes it back; then it arrives.
        try server.sync()
        try desktop.sync()
        #expect(desktop.secret(other) == "o1", "\(desktop.refused)")

        // The server is removed: the vault key rotates; what the laptop writes next, the server
        // cannot read, while the desktop can.
        try SyncEngine.remove(SyncIDs.hex(server.vault.identity.device.id), on: laptop.git, vault: &laptop.vault)
        #expect(laptop.vault.generation == 2)
        let secretAfter = laptop.set(nil, label: "after removal", secret: "a1")
        try laptop.sync()
        try desktop.sync()
        server.refused = []
        // The removed server stops syncing: it would only write back what it can no longer read.
        #expect(throws: SyncError.vault("this machine was removed from the vault; it syncs no more (secretctl sync leave, then join again)")) {
            try server.sync()
        }
        #expect(desktop.secret(secretAfter) == "a1")
        #expect(server.secret(secretAfter) == nil)
        #expect(server.vault.generation == 1)

        // A removed device that goes on writing (not this software, or an altered copy) with the
        // key it has: the others refuse what it wrote after the rotation began.
        try server.git.synchronize()
        let plantedHeader = server.vault.stamp(item: nil, deleted: false)
        let planted = plantedHeader.fileName
        let plantedItem = SyncItem(
            contents: ItemContents(label: "planted", attributes: [:], secret: SecureBytes(Array("p1".utf8)), contentType: "text/plain"),
            created: 1, modified: 2)
        let sealed = try SyncRecord.seal(plantedItem, header: plantedHeader, key: try #require(server.vault.keys[1]))
        try server.git.write(sealed.bytes, to: "items/\(planted)")
        #expect(try server.git.publish(message: "planted") == .pushed)
        desktop.refused = []
        try desktop.sync()
        try laptop.sync()
        #expect(desktop.items[planted] == nil && laptop.items[planted] == nil)
        #expect(desktop.refused.contains(.retiredKey(file: planted, generation: 1)), "\(desktop.refused)")
        // What the others hold from before the removal still opens everywhere, the server too.
        #expect(desktop.secret(note) == "n2" && server.secret(note) == "n2")
        // The items the server could not read were not written back over by it.
        #expect(try SyncRecord(fileName: secretAfter, bytes: try #require(try laptop.git.files(in: "items")[secretAfter]),
                               vault: laptop.vault.id).header.keyGeneration == 2)

        // A machine that joins after the rotation reads old and new items alike.
        let wall = Machine.Wall()
        let tabletGit = clone("tablet", remote)
        let (tabletVault, _) = try SyncEngine.join(on: tabletGit, identity: try SyncIdentity.generate(), clock: clock(wall))
        try SyncEngine.approve(SyncIDs.hex(tabletVault.identity.device.id), on: laptop.git, vault: laptop.vault)
        let tablet = Machine(git: tabletGit, vault: tabletVault, wall: wall)
        try tablet.sync()
        #expect(tablet.vault.generation == 2 && tablet.secret(note) == "n2" && tablet.secret(secretAfter) == "a1")
        #expect(tablet.items[planted] == nil && tablet.refused.contains(.retiredKey(file: planted, generation: 1)))
        // The files the host replaced were written back by the machines that hold them.
        #expect(tablet.secret(other) == "o1" && desktop.secret(other) == "o1", "\(desktop.refused)")
    }

    /// A laptop and a desktop that synced `count` items the laptop made; the remote, both, the ids.
    func laptopAndDesktop(sharing count: Int) throws -> (String, Machine, Machine, [String]) {
        let remote = try remote()
        let machines = try machines(remote, others: ["desktop"])
        let ids = (0..<count).map { machines[0].set(nil, label: "item\($0)", secret: "s\($0)") }
        for machine in machines { try machine.sync() }
        return (remote, machines[0], machines[1], ids)
    }

    @Test("a round reads only the item files changed since the commit it last merged against: a change, a delete, a tampered file")
    func changedFilesOnly() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let (remote, laptop, desktop, ids) = try laptopAndDesktop(sharing: 5)
        #expect(desktop.filesRead == 5, "the first round after joining reads every file")
        let head = try desktop.git.head()
        #expect(desktop.vault.base != nil && desktop.vault.base == head)
        try desktop.sync()
        #expect(desktop.filesRead == 0, "an idle round reads no item file")

        // A change and a delete arrive from the two files that changed.
        laptop.set(ids[0], label: "item0", secret: "changed")
        laptop.delete(ids[1])
        try laptop.sync()
        try desktop.sync()
        #expect(desktop.filesRead == 2 && desktop.secret(ids[0]) == "changed" && desktop.items[ids[1]] == nil)
        #expect(desktop.secret(ids[2]) == "s2" && desktop.refused.isEmpty, "\(desktop.refused)")

        // The remote's host alters one file and adds a copy under another name: both are
        // refused, the altered one is written back, and the stray copy is read again by every
        // round (still refused) while it stays.
        let host = clone("host", remote)
        try host.synchronize()
        var altered = try #require(host.files(in: "items")[ids[2]])
        altered[altered.count - 1] ^= 1
        try host.write(altered, to: "items/\(ids[2])")
        let stray = SyncIDs.hex(SyncIDs.random())
        try host.write(try #require(host.files(in: "items")[ids[3]]), to: "items/\(stray)")
        #expect(try host.publish(message: "the host meddles") == .pushed)
        try desktop.sync()
        #expect(desktop.filesRead == 2 && desktop.secret(ids[2]) == "s2")
        var reasons = desktop.refused.map { "\($0)" }.joined(separator: "\n")
        #expect(reasons.contains("altered") && reasons.contains("renamed"), "\(reasons)")
        #expect(desktop.vault.unsettled == [stray])
        desktop.refused = []
        try desktop.sync()
        reasons = desktop.refused.map { "\($0)" }.joined(separator: "\n")
        #expect(desktop.filesRead == 1 && reasons.contains("renamed") && !reasons.contains("altered"), "\(reasons)")
        try host.synchronize()
        let restored = try SyncRecord(fileName: ids[2], bytes: try #require(host.files(in: "items")[ids[2]]), vault: laptop.vault.id)
        #expect(try restored.open(with: laptop.vault.keys) != nil, "the desktop wrote its version back")
        laptop.refused = []
        try laptop.sync()
        #expect(laptop.secret(ids[2]) == "s2" && laptop.refused.map { "\($0)" } == ["\(stray) was renamed: its name is not the item it holds"])
    }

    @Test("a round whose remembered commit is unknown or gone (a rewritten remote) reads every file, and finds what changed")
    func fallbackToEveryFile() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let (remote, laptop, desktop, ids) = try laptopAndDesktop(sharing: 4)

        // A lost clone is made again from the remote, whose history has the remembered commit:
        // still only the changed files are read.
        laptop.set(ids[0], label: "item0", secret: "changed")
        try laptop.sync()
        try FileManager.default.removeItem(at: desktop.git.directory)
        try desktop.sync()
        #expect(desktop.filesRead == 1 && desktop.secret(ids[0]) == "changed")

        // A commit that is in no clone (a state saved elsewhere): every file is read.
        laptop.delete(ids[1])
        try laptop.sync()
        desktop.vault.base = String(repeating: "0", count: 40)
        try desktop.sync()
        #expect(desktop.filesRead == 4 && desktop.items[ids[1]] == nil && desktop.secret(ids[3]) == "s3")
        #expect(desktop.refused.isEmpty, "\(desktop.refused)")
        try desktop.sync()
        #expect(desktop.filesRead == 0)

        // The remote's history is rewritten (one commit with the same files, one of them
        // altered): the remembered commit is no ancestor, so every file is read again.
        try RewrittenHistory.push(to: remote, scratch: root, appendingTo: "items/\(ids[2])")
        desktop.refused = []
        try desktop.sync()
        #expect(desktop.filesRead == 4 && desktop.secret(ids[2]) == "s2")
        #expect(desktop.refused == [.tampered(file: ids[2])], "\(desktop.refused)")
        laptop.refused = []
        try laptop.sync()
        #expect(laptop.filesRead == 4 && laptop.secret(ids[2]) == "s2" && laptop.secret(ids[0]) == "changed")
        #expect(laptop.refused.isEmpty, "\(laptop.refused)")
    }

    @Test("a machine's state survives encoding (as secretd stores it: the state, and each item's entry on its own): the next rounds go on from it; a state from before moves into entries; damaged state is refused")
    func stateEncoding() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let remote = try remote()
        let machines = try machines(remote, others: ["desktop"])
        let (laptop, desktop) = (machines[0], machines[1])
        let first = laptop.set(nil, label: "first", secret: "f1")
        for machine in machines { try machine.sync() }

        let bytes = desktop.vault.encoded()
        let wall = desktop.wall
        var restored = try SyncVault(decoding: bytes, wallClock: { wall.now })
        // The state proper holds no item's entry: each is kept on its own.
        #expect(restored.current.isEmpty && restored.seen.isEmpty && restored.touched.isEmpty)
        let names = Set(desktop.vault.current.keys).union(desktop.vault.seen.keys)
        #expect(!names.isEmpty)
        for name in names { try restored.takeEntry(name, try #require(desktop.vault.encodedEntry(name))) }
        #expect(restored.touched.isEmpty)
        #expect(desktop.vault.encodedEntry(String(repeating: "0", count: 32)) == nil)
        #expect(restored.id == desktop.vault.id && restored.identity.device == desktop.vault.identity.device)
        #expect(restored.identity.privateKey.constantTimeEquals(desktop.vault.identity.privateKey))
        let key = try #require(desktop.vault.keys[1])
        #expect(restored.generation == 1 && restored.keys[1]?.constantTimeEquals(key) == true)
        #expect(restored.starts == desktop.vault.starts && restored.current == desktop.vault.current)
        #expect(restored.seen == desktop.vault.seen && restored.clock.last == desktop.vault.clock.last)
        #expect(restored.encoded().constantTimeEquals(bytes))

        // A state written whole, as before the entries were kept on their own: everything
        // decodes, and every item is touched, for secretd to keep as entries.
        let whole = try SyncVault(decoding: desktop.vault.encoded(withEntries: true), wallClock: { 0 })
        #expect(whole.current == desktop.vault.current && whole.seen == desktop.vault.seen && whole.touched == names)

        // A round touches what it changed, and only that.
        desktop.vault.touched = []
        let second = desktop.set(nil, label: "second", secret: "s1")
        try desktop.sync()
        #expect(desktop.vault.touched == [second])

        // A damaged entry, or one holding another item, is refused.
        let entry = try #require(desktop.vault.encodedEntry(first))
        var scratch = restored
        for damaged in [Array(entry.dropLast()), entry + [0], Array("not an entry".utf8), [UInt8](), Array(entry.prefix(20)) + [2] + entry.dropFirst(21)] {
            #expect(throws: SyncError.self) { try scratch.takeEntry(first, damaged) }
        }
        #expect(throws: SyncError.self) { try scratch.takeEntry(second, entry) }

        // The desktop goes on from the restored state: a change there reaches the laptop.
        desktop.vault = restored
        desktop.set(first, label: "first", secret: "f2")
        try desktop.sync()
        try laptop.sync()
        #expect(laptop.secret(first) == "f2" && desktop.refused.isEmpty && laptop.refused.isEmpty)

        // A state written before the remembered commit (no tail) decodes, with none; one with
        // a commit and unsettled files keeps them.
        var plain = desktop.vault
        plain.base = nil
        plain.unsettled = []
        let withoutTail = plain.encoded(withEntries: true).withBytes { Array($0.dropLast(8)) }
        let old = try SyncVault(decoding: SecureBytes(withoutTail), wallClock: { 0 })
        #expect(old.base == nil && old.unsettled.isEmpty && old.current == plain.current && old.seen == plain.seen)
        plain.base = String(repeating: "ab", count: 20)
        plain.unsettled = ["one", "two"]
        let again = try SyncVault(decoding: plain.encoded(), wallClock: { 0 })
        #expect(again.base == plain.base && again.unsettled == plain.unsettled)

        // Truncated, lengthened or foreign bytes are refused.
        let state = bytes.withBytes { Array($0) }
        for damaged in [Array(state.dropLast()), state + [0], Array("not a state".utf8), [UInt8]()] {
            #expect(throws: SyncError.self) { try SyncVault(decoding: SecureBytes(damaged), wallClock: { 0 }) }
        }
    }

    @Test("the remote's objects hold no label, attribute value or secret after a few rounds")
    func remoteLearnsNothing() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let remote = try remote()
        let machines = try machines(remote, others: ["desktop"])
        for index in 0..<10 { machines[index % 2].set(nil, label: "label\(index)visible", secret: "secret\(index)visible") }
        for machine in machines { try machine.sync() }
        try machines[0].sync()
        let objects = try CommandResult.run(
            ["sh", "-c", "git -C \"$1\" cat-file --batch-all-objects --batch", "sh", remote], environment: ["PATH": "/usr/bin:/bin"],
            scratch: root, timeout: 30)
        #expect(objects.status == 0 && objects.text.contains("items"))
        #expect(!objects.text.contains("visible") && !objects.text.contains("svc"))
        #expect(machines[1].items.count == 10)
    }
}

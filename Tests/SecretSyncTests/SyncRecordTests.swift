import Foundation
import SecretCrypto
import SecretStore
import Testing

@testable import SecretSync

/// The item files of the sync repository: what they reveal, and every way a file that is not
/// what its device made is refused; the merge rule; the hybrid logical clock.
@Suite struct SyncRecordTests {
    let vault = SyncIDs.random()
    let device = SyncIDs.random()
    let key = Gcrypt.randomKey()

    func item(_ label: String, _ secret: String, attributes: [String: String] = ["service": "mail", "account": "alice"]) -> SyncItem {
        SyncItem(
            contents: ItemContents(label: label, attributes: attributes, secret: SecureBytes(Array(secret.utf8)), contentType: "text/plain"),
            created: 1_796_000_000, modified: 1_796_000_100)
    }

    func header(item: [UInt8] = SyncIDs.random(), at milliseconds: UInt64 = 1_796_000_000_000, device: [UInt8]? = nil,
                deleted: Bool = false, generation: UInt32 = 1) -> SyncHeader {
        SyncHeader(vault: vault, item: item, timestamp: SyncTimestamp(milliseconds: milliseconds), device: device ?? self.device,
                   deleted: deleted, keyGeneration: generation)
    }

    @Test("an item round-trips through its file, which holds no label, attribute value or secret in the clear")
    func roundTrip() throws {
        let record = try SyncRecord.seal(item("Mail ✓ label", "s3cr3t-value"), header: header(), key: key)
        let file = record.bytes
        let read = try SyncRecord(fileName: record.header.fileName, bytes: file, vault: vault)
        #expect(read == record)
        let opened = try #require(try read.open(with: [1: key]))
        #expect(opened.contents.label == "Mail ✓ label")
        #expect(opened.contents.attributes == ["service": "mail", "account": "alice"])
        #expect(opened.contents.secret.withBytes { Array($0) } == Array("s3cr3t-value".utf8))
        #expect(opened.contents.contentType == "text/plain")
        #expect(opened.created == 1_796_000_000 && opened.modified == 1_796_000_100)
        for clear in ["Mail", "s3cr3t", "alice", "service", "text/plain"] {
            #expect(Data(file).range(of: Data(clear.utf8)) == nil, "\(clear) is readable in the file")
        }
        #expect(record.header.fileName.count == 32 && record.header.fileName.allSatisfy(\.isHexDigit))
    }

    @Test("a delete marker opens as nothing, and is authenticated like an item")
    func deleteMarker() throws {
        let marker = try SyncRecord.seal(nil, header: header(deleted: true), key: key)
        let read = try SyncRecord(fileName: marker.header.fileName, bytes: marker.bytes, vault: vault)
        #expect(try read.open(with: [1: key]) == nil)
        var flipped = marker.bytes
        flipped[SyncRecord.magic.count + 60] = 0  // the delete flag
        let undeleted = try SyncRecord(fileName: marker.header.fileName, bytes: flipped, vault: vault)
        #expect(throws: SyncError.tampered(file: marker.header.fileName)) { try undeleted.open(with: [1: key]) }
    }

    @Test("renamed, foreign, altered, truncated, wrongly keyed and later-generation files are refused, each with its reason")
    func refusals() throws {
        let record = try SyncRecord.seal(item("l", "s"), header: header(), key: key)
        let name = record.header.fileName
        let other = SyncIDs.hex(SyncIDs.random())
        #expect(throws: SyncError.renamed(file: other)) { try SyncRecord(fileName: other, bytes: record.bytes, vault: vault) }
        #expect(throws: SyncError.foreignVault(file: name)) { try SyncRecord(fileName: name, bytes: record.bytes, vault: SyncIDs.random()) }
        #expect(throws: SyncError.malformed("\(name) is truncated")) {
            try SyncRecord(fileName: name, bytes: Array(record.bytes.prefix(60)), vault: vault)
        }
        #expect(throws: SyncError.malformed("\(name) does not start as an item file")) {
            try SyncRecord(fileName: name, bytes: Array("not a file".utf8), vault: vault)
        }
        // Any byte of the sealed part, or of the clear timestamp, device or generation.
        let headerStart = SyncRecord.magic.count
        for offset in [record.bytes.count - 1, record.bytes.count - 20, headerStart + 39, headerStart + 50, headerStart + 64] {
            var altered = record.bytes
            altered[offset] ^= 0x01
            let parsed = try SyncRecord(fileName: name, bytes: altered, vault: vault)
            #expect(throws: SyncError.self) { try parsed.open(with: [0: key, 1: key]) }
        }
        // Another key of the same generation; a generation this device was not given.
        #expect(throws: SyncError.tampered(file: name)) { try record.open(with: [1: Gcrypt.randomKey()]) }
        let later = try SyncRecord.seal(item("l", "s"), header: header(generation: 2), key: key)
        #expect(throws: SyncError.unknownKeyGeneration(file: later.header.fileName, generation: 2)) { try later.open(with: [1: key]) }
        // The sealed part of one item under another item's header.
        let second = try SyncRecord.seal(item("m", "t"), header: header(), key: key)
        let spliced = Array(second.bytes.prefix(SyncRecord.magic.count + SyncRecord.headerLength))
            + Array(record.bytes.dropFirst(SyncRecord.magic.count + SyncRecord.headerLength))
        #expect(throws: SyncError.tampered(file: second.header.fileName)) {
            try SyncRecord(fileName: second.header.fileName, bytes: spliced, vault: vault).open(with: [1: key])
        }
    }

    @Test("merge: the higher (timestamp, device) wins in either order; the loser goes to history; replays are refused")
    func merge() throws {
        let id = SyncIDs.random()
        let laptop = [UInt8](repeating: 1, count: 16)
        let desktop = [UInt8](repeating: 2, count: 16)
        let early = header(item: id, at: 1000, device: desktop)
        let late = header(item: id, at: 2000, device: laptop)
        #expect(SyncMerge.decide(arrived: late, local: early, seenFromDevice: nil) == .take(losing: early))
        #expect(SyncMerge.decide(arrived: early, local: late, seenFromDevice: nil) == .keep(losing: early))
        #expect(SyncMerge.decide(arrived: late, local: nil, seenFromDevice: nil) == .take(losing: nil))
        #expect(SyncMerge.decide(arrived: late, local: late, seenFromDevice: late.timestamp) == .same)
        // The same moment on two machines: the device id decides, the same way everywhere.
        let tieLaptop = header(item: id, at: 3000, device: laptop)
        let tieDesktop = header(item: id, at: 3000, device: desktop)
        #expect(SyncMerge.decide(arrived: tieDesktop, local: tieLaptop, seenFromDevice: nil) == .take(losing: tieLaptop))
        #expect(SyncMerge.decide(arrived: tieLaptop, local: tieDesktop, seenFromDevice: nil) == .keep(losing: tieLaptop))
        // A delete is a version like any other.
        let deletion = header(item: id, at: 4000, device: laptop, deleted: true)
        #expect(SyncMerge.decide(arrived: deletion, local: tieDesktop, seenFromDevice: nil) == .take(losing: tieDesktop))
        // An older version from a device already seen at a later time: put back by the remote.
        #expect(SyncMerge.decide(arrived: early, local: late, seenFromDevice: SyncTimestamp(milliseconds: 1500))
                == .refuse(.replayed(file: early.fileName)))
    }

    @Test("the hybrid logical clock never goes back, and after a remote timestamp comes after it")
    func clock() {
        final class Wall: @unchecked Sendable { var now: UInt64 = 5000 }
        let wall = Wall()
        var clock = HybridLogicalClock(wallClock: { wall.now })
        let first = clock.tick()
        #expect(first == SyncTimestamp(milliseconds: 5000))
        #expect(clock.tick() == SyncTimestamp(milliseconds: 5000, counter: 1))
        wall.now = 4000  // the wall clock steps back
        let third = clock.tick()
        #expect(third > first && third == SyncTimestamp(milliseconds: 5000, counter: 2))
        clock.observe(SyncTimestamp(milliseconds: 9000, counter: 7))  // another machine runs ahead
        #expect(clock.tick() == SyncTimestamp(milliseconds: 9000, counter: 8))
        wall.now = 10_000
        #expect(clock.tick() == SyncTimestamp(milliseconds: 10_000))
        #expect(SyncTimestamp(milliseconds: 1, counter: 9) < SyncTimestamp(milliseconds: 2))
    }
}

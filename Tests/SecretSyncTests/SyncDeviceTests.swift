import Foundation
import SecretCrypto
import Testing

@testable import SecretSync

/// Devices' keys: a vault key wrapped for one device opens only with that device's private
/// key, for that vault and generation; device entries and the approval code.
@Suite struct SyncDeviceTests {
    @Test("a wrapped vault key opens only for its device, vault and generation")
    func keyWrap() throws {
        let vault = SyncIDs.random()
        let laptop = try SyncIdentity.generate()
        let desktop = try SyncIdentity.generate()
        let key = Gcrypt.randomKey()
        let start = SyncTimestamp(milliseconds: 1_796_000_000_123, counter: 4)
        let wrapped = try SyncKeyWrap.wrap(key, start: start, generation: 3, vault: vault, for: laptop.device)
        let opened = try SyncKeyWrap.unwrap(wrapped, generation: 3, vault: vault, identity: laptop, fileName: "k")
        #expect(opened.key.constantTimeEquals(key) && opened.start == start)
        #expect(throws: SyncError.tampered(file: "k")) { try SyncKeyWrap.unwrap(wrapped, generation: 3, vault: vault, identity: desktop, fileName: "k") }
        #expect(throws: SyncError.tampered(file: "k")) { try SyncKeyWrap.unwrap(wrapped, generation: 4, vault: vault, identity: laptop, fileName: "k") }
        #expect(throws: SyncError.tampered(file: "k")) {
            try SyncKeyWrap.unwrap(wrapped, generation: 3, vault: SyncIDs.random(), identity: laptop, fileName: "k")
        }
        var altered = wrapped
        altered[altered.count - 1] ^= 1
        #expect(throws: SyncError.tampered(file: "k")) { try SyncKeyWrap.unwrap(altered, generation: 3, vault: vault, identity: laptop, fileName: "k") }
        #expect(throws: SyncError.malformed("k is not a wrapped key")) {
            try SyncKeyWrap.unwrap([1, 2, 3], generation: 3, vault: vault, identity: laptop, fileName: "k")
        }
        // The same device, restored from its stored id and private key.
        let restored = try SyncIdentity(id: laptop.device.id, privateKey: laptop.privateKey)
        #expect(restored.device == laptop.device)
    }

    @Test("device entries round-trip under their own name only; the code is six digits, the same on both sides")
    func entriesAndCodes() throws {
        let vault = SyncIDs.random()
        let device = try SyncIdentity.generate().device
        let name = SyncIDs.hex(device.id)
        #expect(try SyncDevice(entry: device.entry, fileName: name) == device)
        let elsewhere = SyncIDs.hex(SyncIDs.random())
        #expect(throws: SyncError.renamed(file: elsewhere)) { try SyncDevice(entry: device.entry, fileName: elsewhere) }
        #expect(throws: SyncError.self) { try SyncDevice(entry: Array(device.entry.dropLast()), fileName: name) }
        let code = device.code(in: vault)
        #expect(code.count == 7 && code.dropFirst(3).first == "-" && code.filter(\.isNumber).count == 6)
        #expect(try SyncDevice(entry: device.entry, fileName: name).code(in: vault) == code)
        #expect(SyncIDs.bytes(hex: name) == device.id && SyncIDs.bytes(hex: "xyz") == nil)
    }
}

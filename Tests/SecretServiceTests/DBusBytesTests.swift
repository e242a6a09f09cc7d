import Synchronization
import Testing

@testable import SecretService
import SecretCrypto
import SecretStore
import DBusValues

@Suite struct DBusBytesTests {
    @Test("an ay's bytes are zeros before their memory is freed; they compare by content and never print")
    func wipedAndQuiet() {
        let secret = Array("hunter2-secret".utf8)
        var bytes: DBusBytes? = DBusBytes(secret)
        let address = bytes!.withUnsafeBytes { $0.baseAddress }
        let seen = Mutex<[UInt8]?>(nil)
        DBusBytes.afterWipe = { memory in
            if memory.baseAddress == address { seen.withLock { $0 = Array(memory.prefix(secret.count)) } }
        }
        defer { DBusBytes.afterWipe = nil }
        #expect(bytes == DBusBytes(secret) && bytes != DBusBytes(Array(secret.dropLast())) && bytes!.array == secret)
        let printed = "\(DBusValue.tuple([.bytes(bytes!)]))"
        #expect(!printed.contains("104") && printed.contains("14 bytes"), "\(printed)")
        bytes = nil
        #expect(seen.withLock { $0 } == Array(repeating: 0, count: secret.count))
    }

    @Test("a plain session's reply carries the secret as wiped bytes, and decodes back")
    func plainSessionRoundTrip() throws {
        let session = Session(owner: ":1.1", algorithm: .plain)
        let encoded = session.encode(SecureBytes(Array("s3cr3t".utf8)), contentType: "text/plain", sessionPath: "/s")
        guard case .success(.tuple(let fields)) = encoded, case .bytes(let parameters) = fields[1], case .bytes(let value) = fields[2]
        else { Issue.record("not (oayays): \(encoded)"); return }
        #expect(parameters.isEmpty && value.array == Array("s3cr3t".utf8))
        let decoded = try session.decode(parameters: parameters, value: value).get()
        #expect(decoded.withBytes { Array($0) } == Array("s3cr3t".utf8))
    }
}

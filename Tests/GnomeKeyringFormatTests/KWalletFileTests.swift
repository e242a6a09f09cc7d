import Foundation
import GnomeKeyringFormat
import KeychainTestSupport
import SecretCrypto
import Testing

/// The KWallet reader against wallet files that the real kwalletd5 (5.103, Debian 12) wrote in
/// this run (scripts/make-kwallets.py), compared entry by entry with what a fresh kwalletd
/// showed over D-Bus after loading them; and against the files damaged.
@Suite struct KWalletFileTests {
    /// The files and the manifest, made once per test run.
    struct Fixtures {
        let made: KWalletFiles.Made
        var wallets: [[String: Any]] { made.wallets }

        func data(_ file: String) throws -> [UInt8] {
            Array(try Data(contentsOf: made.directory.appendingPathComponent(file)))
        }

        func wallet(_ name: String) throws -> [String: Any] {
            try #require(wallets.first { $0["name"] as? String == name })
        }
    }

    static func fixtures() throws -> Fixtures { Fixtures(made: try KWalletFiles.made()) }

    static func bytes(_ secure: SecureBytes) -> [UInt8] { secure.withBytes { Array($0) } }

    static func password(_ wallet: [String: Any]) -> SecureBytes {
        SecureBytes(Array((wallet["password"] as? String ?? "").utf8))
    }

    @Test("every wallet kwalletd wrote reads back as kwalletd showed it: folders, keys, types and values; old SHA-1 keys too")
    func realFiles() throws {
        let fixtures = try Self.fixtures()
        #expect(fixtures.wallets.count == 6)
        for expected in fixtures.wallets {
            let name = try #require(expected["name"] as? String)
            let data = try fixtures.data("\(name).kwl")
            let legacy = expected["legacy"] as? Bool == true
            let salt = legacy ? nil : try fixtures.data("\(name).salt")
            #expect(KWalletFile.isWallet(data))
            #expect(KWalletFile.needsSalt(data) == !legacy)
            if legacy {
                #expect(Array(data[12..<16]) == [0, 0, 3, 0], "format 0.0, Blowfish-CBC, SHA-1: \(name)")
            } else {
                #expect(Array(data[12..<16]) == [0, 1, 3, 2], "format 0.1, Blowfish-CBC, PBKDF2-SHA512")
            }
            let wallet = try KWalletFile.read(data, salt: salt, password: Self.password(expected))
            let folders = try #require(expected["folders"] as? [String: [[String: Any]]])
            #expect(Set(wallet.folders) == Set(folders.keys), "\(name)")
            #expect(KWalletFile.entryCount(data) == folders.values.map(\.count).reduce(0, +))
            #expect(wallet.entries.count == folders.values.map(\.count).reduce(0, +))
            for (folder, entries) in folders {
                for entry in entries {
                    let key = try #require(entry["key"] as? String)
                    let found = wallet.entries.filter { $0.folder == folder && $0.key == key }
                    try #require(found.count == 1, "\(name): \(folder)/\(key)")
                    let read = found[0]
                    #expect(read.type.rawValue == (entry["type"] as? NSNumber)?.int32Value, "\(folder)/\(key)")
                    switch read.type {
                    case .password:
                        #expect(Self.bytes(read.secret) == Array((entry["password"] as? String ?? "-").utf8), "\(folder)/\(key)")
                    case .stream:
                        #expect(Self.bytes(read.secret) == Array(Data(base64Encoded: entry["value"] as? String ?? "") ?? Data([1])))
                    case .map:
                        let map = try #require(entry["map"] as? [String: String])
                        let json = try JSONSerialization.jsonObject(with: Data(Self.bytes(read.secret))) as? [String: String]
                        #expect(json == map, "\(folder)/\(key)")
                    }
                }
            }
        }
        // A map is a compact JSON object, its names sorted, its text UTF-8 (as ksecretd gives it).
        let kdewallet = try fixtures.wallet("kdewallet")
        let wallet = try KWalletFile.read(
            try fixtures.data("kdewallet.kwl"), salt: try fixtures.data("kdewallet.salt"), password: Self.password(kdewallet))
        let form = try #require(wallet.entries.first { $0.key == "https://example.org/login#form" })
        #expect(String(decoding: Self.bytes(form.secret), as: UTF8.self) == #"{"pass":"p@ss=1;x","user":"alice","ünï":"cødé ✓"}"#)
        #expect(Self.bytes(try #require(wallet.entries.first { $0.key == "empty map" }).secret) == Array("{}".utf8))
        #expect(wallet.folders.contains("Empty Folder"))
    }

    @Test("the key is PBKDF2-SHA512 of the password and the salt file, as pam_kwallet hands it to kwalletd")
    func key() throws {
        let fixtures = try Self.fixtures()
        for expected in fixtures.wallets where expected["key_hex"] != nil {
            let name = try #require(expected["name"] as? String)
            let key = try KWalletFile.key(of: try fixtures.data("\(name).kwl"), salt: try fixtures.data("\(name).salt"), password: Self.password(expected))
            #expect(Self.bytes(key).map { String(format: "%02x", $0) }.joined() == expected["key_hex"] as? String)
        }
    }

    @Test("a wrong password, another wallet's salt and a missing salt are told apart from damage")
    func passwords() throws {
        let fixtures = try Self.fixtures()
        let data = try fixtures.data("work.kwl")
        let salt = try fixtures.data("work.salt")
        #expect(throws: KWalletError.wrongPassword) { try KWalletFile.read(data, salt: salt, password: SecureBytes(Array("kde-pw ✓".utf8))) }
        #expect(throws: KWalletError.wrongPassword) { try KWalletFile.read(data, salt: salt, password: SecureBytes(count: 0)) }
        #expect(throws: KWalletError.wrongPassword) {
            try KWalletFile.read(data, salt: try fixtures.data("kdewallet.salt"), password: SecureBytes(Array("work-pw".utf8)))
        }
        #expect(throws: KWalletError.saltRequired) { try KWalletFile.read(data, salt: nil, password: SecureBytes(Array("work-pw".utf8))) }
        #expect(KWalletError.wrongPassword.description.hasPrefix("wrong password"))
        // An old wallet's key needs no salt; one character more or less is another key.
        let legacy = try fixtures.data("legacy24.kwl")
        #expect(try KWalletFile.read(legacy, salt: nil, password: SecureBytes(Array("Legacy-pw-24-characters!".utf8))).entries.count == 2)
        #expect(throws: KWalletError.wrongPassword) { try KWalletFile.read(legacy, salt: nil, password: SecureBytes(Array("Legacy-pw-24-characters".utf8))) }
        #expect(throws: KWalletError.wrongPassword) { try KWalletFile.read(legacy, salt: nil, password: SecureBytes(Array("Legacy-pw-24-characters!!".utf8))) }
    }

    @Test("every truncation of a wallet, and every flipped byte in it, is an error or the same read, never a wrong one")
    func damaged() throws {
        let fixtures = try Self.fixtures()
        let data = try fixtures.data("kdewallet.kwl")
        let key = try KWalletFile.key(of: data, salt: try fixtures.data("kdewallet.salt"), password: Self.password(try fixtures.wallet("kdewallet")))
        let original = try KWalletFile.read(data, key: key)
        func same(_ wallet: KWallet) -> Bool {
            wallet.folders == original.folders && wallet.entries.map { "\($0.folder)/\($0.key)/\($0.type)" } == original.entries.map { "\($0.folder)/\($0.key)/\($0.type)" }
                && wallet.entries.map { Self.bytes($0.secret) } == original.entries.map { Self.bytes($0.secret) }
        }
        for length in 0..<data.count {
            let result = Result { () throws(KWalletError) in try KWalletFile.read(Array(data.prefix(length)), key: key) }
            guard case .failure = result else {
                Issue.record("a file cut to \(length) of \(data.count) bytes was read")
                continue
            }
        }
        do {
            _ = try KWalletFile.read(Array(data.dropLast(5)), key: key)
        } catch {
            #expect("\(error)".hasSuffix("not whole 8-byte blocks (cut short?)"), "\(error)")
        }
        for index in data.indices {
            var tampered = data
            tampered[index] ^= 0x5a
            // The clear index (MD5s of the names) is not checked, in kwalletd either.
            guard let read = try? KWalletFile.read(tampered, key: key) else { continue }
            #expect(same(read), "byte \(index)")
        }
        var middle = data
        middle[data.count - 200] ^= 1
        #expect(throws: KWalletError.damaged("its check sum does not match (altered?)")) { try KWalletFile.read(middle, key: key) }
    }

    @Test("versions, ciphers and hashes the reader does not know are refused as such, GPG wallets with a hint")
    func unknownFormats() throws {
        let data = try Self.fixtures().data("work.kwl")
        let password = SecureBytes(Array("work-pw".utf8))
        func changed(_ index: Int, _ value: UInt8) -> [UInt8] {
            var copy = data
            copy[index] = value
            return copy
        }
        #expect(throws: KWalletError.unsupported("format 1.1")) { try KWalletFile.read(changed(12, 1), salt: [1], password: password) }
        #expect(throws: KWalletError.unsupported("format 0.2")) { try KWalletFile.read(changed(13, 2), salt: [1], password: password) }
        #expect(throws: KWalletError.unsupported("cipher 1")) { try KWalletFile.read(changed(14, 1), salt: [1], password: password) }
        #expect(throws: KWalletError.unsupported("hash 1")) { try KWalletFile.read(changed(15, 1), salt: [1], password: password) }
        do {
            _ = try KWalletFile.read(changed(14, 2), salt: [1], password: password)
            Issue.record("a GPG wallet was read")
        } catch {
            #expect("\(error)".contains("GPG"), "\(error)")
        }
        #expect(throws: KWalletError.notAWallet) { try KWalletFile.read(Array("KWALLET\n".utf8), salt: nil, password: password) }
        #expect(throws: KWalletError.notAWallet) { try KWalletFile.read([], salt: nil, password: password) }
        #expect(KWalletFile.entryCount(Array(data.prefix(20))) == nil)
    }

    @Test("Blowfish matches Schneier's test vectors, ECB and CBC from a zero IV")
    func blowfish() throws {
        func hex(_ text: String) -> [UInt8] {
            stride(from: 0, to: text.count, by: 2).map { UInt8(text.dropFirst($0).prefix(2), radix: 16)! }
        }
        // (key, plaintext, ciphertext), from Eric Young's set of Blowfish test vectors.
        let vectors = [
            ("0000000000000000", "0000000000000000", "4EF997456198DD78"),
            ("FFFFFFFFFFFFFFFF", "FFFFFFFFFFFFFFFF", "51866FD5B85ECB8A"),
            ("0123456789ABCDEF", "1111111111111111", "61F9C3802281B096"),
        ]
        for (key, plaintext, ciphertext) in vectors {
            let ecb = try Gcrypt.decryptBlowfishBlocks(ArraySlice(hex(ciphertext)), key: SecureBytes(hex(key)), mode: .ecb)
            #expect(Self.bytes(ecb) == hex(plaintext), "\(key)")
            let cbc = try Gcrypt.decryptBlowfishBlocks(ArraySlice(hex(ciphertext) + hex(ciphertext)), key: SecureBytes(hex(key)), mode: .cbc)
            let second = zip(hex(plaintext), hex(ciphertext)).map { $0 ^ $1 }
            #expect(Self.bytes(cbc) == hex(plaintext) + second, "\(key)")
        }
    }
}

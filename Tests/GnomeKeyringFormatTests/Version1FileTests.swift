import Foundation
@testable import GnomeKeyringFormat
import KeychainTestSupport
import SecretCrypto
import Testing

/// The reader of version 1 keyring files (oo7's, libsecret's file backend) against files the
/// real libsecret wrote in this run (``FileBackendKeyring``), and against those files damaged.
@Suite struct Version1FileTests {
    static let password = "v1-password"
    static let items: [FileBackendKeyring.Item] = [
        .init(label: "Mail", attributes: [("service", "mail"), ("account", "alice")], secret: "s3cr3t"),
        .init(label: "Wi-Fi “home” ✓", attributes: [("service", "wifi"), ("ssid", "home net"), ("note", "")], secret: "pässwörd\nwith two lines ✓"),
        .init(label: "Token", attributes: [("service", "api"), ("account", "bot")], secret: String(repeating: "x", count: 3000)),
    ]

    /// A file with ``items``, made once per test.
    static func made() throws -> (data: [UInt8], started: UInt64, ended: UInt64, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("v1-keyring-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let started = UInt64(Date().timeIntervalSince1970)
        let file = directory.appendingPathComponent("default.keyring")
        try FileBackendKeyring.write(items, to: file, password: password, scratch: directory)
        let ended = UInt64(Date().timeIntervalSince1970) + 1
        return (Array(try Data(contentsOf: file)), started, ended, directory)
    }

    static func bytes(_ secure: SecureBytes) -> [UInt8] { secure.withBytes { Array($0) } }

    @Test("a file libsecret's file backend wrote reads back item by item: labels, attributes, secrets, times")
    func realFile() throws {
        let made = try Self.made()
        defer { try? FileManager.default.removeItem(at: made.directory) }
        #expect(GnomeKeyringFile.isEncrypted(made.data))
        #expect(GnomeKeyringFile.itemCount(made.data) == Self.items.count)
        let keyring = try GnomeKeyringFile.read(made.data, name: "default", password: SecureBytes(Array(Self.password.utf8)))
        #expect(keyring.name == "default")
        let byLabel = Dictionary(uniqueKeysWithValues: keyring.items.map { ($0.label, $0) })
        #expect(Set(byLabel.keys) == Set(Self.items.map(\.label)))
        for item in Self.items {
            let read = try #require(byLabel[item.label])
            // libsecret adds the schema of secret-tool's items.
            #expect(read.attributes.filter { $0.key != "xdg:schema" } == Dictionary(uniqueKeysWithValues: item.attributes), "\(item.label)")
            #expect(Self.bytes(read.secret) == Array(item.secret.utf8), "\(item.label)")
            #expect((made.started...made.ended).contains(read.created) && (made.started...made.ended).contains(read.modified))
        }
        #expect((made.started...made.ended).contains(keyring.modified))
    }

    @Test("a wrong or missing password is told apart from damage")
    func passwords() throws {
        let made = try Self.made()
        defer { try? FileManager.default.removeItem(at: made.directory) }
        #expect(throws: GnomeKeyringError.wrongPassword) {
            try GnomeKeyringFile.read(made.data, name: "default", password: SecureBytes(Array("not-it".utf8)))
        }
        #expect(throws: GnomeKeyringError.passwordRequired) { try GnomeKeyringFile.read(made.data, name: "default", password: nil) }
    }

    @Test("every truncation is an error, and every flipped byte an error or no change, never a wrong read")
    func damaged() throws {
        let made = try Self.made()
        defer { try? FileManager.default.removeItem(at: made.directory) }
        let password = SecureBytes(Array(Self.password.utf8))
        let original = try GnomeKeyringFile.read(made.data, name: "default", password: password)
        func contents(_ keyring: GnomeKeyring) -> [String] {
            keyring.items.map { "\($0.label)|\($0.attributes.sorted { $0.key < $1.key })|\(Self.bytes($0.secret))|\($0.created)|\($0.modified)" }
        }
        for length in stride(from: 0, to: made.data.count, by: 7) {
            let result = Result { try GnomeKeyringFile.read(Array(made.data.prefix(length)), name: "default", password: password) }
            guard case .failure(let error) = result else {
                Issue.record("a file cut to \(length) of \(made.data.count) bytes was read")
                continue
            }
            #expect(error is GnomeKeyringError)
        }
        // The key for the file's own salt and iteration count, derived once; a copy whose salt or
        // count was changed gets its own derivation, as the reader would do.
        let salt = Array(made.data[22..<54])
        let iterations = Int(made.data[54]) | Int(made.data[55]) << 8 | Int(made.data[56]) << 16 | Int(made.data[57]) << 24
        let key = try Gcrypt.pbkdf2SHA256(password: password, salt: salt, iterations: iterations, length: 16)
        var derivations = 0
        func read(_ data: [UInt8]) throws(GnomeKeyringError) -> GnomeKeyring {
            try GnomeKeyringFile.readVersion1(data, name: "default") { (fileSalt, fileIterations) throws(GnomeKeyringError) in
                if fileSalt == salt && fileIterations == iterations { return key }
                derivations += 1
                do { return try Gcrypt.pbkdf2SHA256(password: password, salt: fileSalt, iterations: fileIterations, length: 16) } catch {
                    throw .damaged("\(error)")
                }
            }
        }
        #expect(try contents(read(made.data)) == contents(original))
        var unnoticed: [Int] = []
        for index in made.data.indices {
            var tampered = made.data
            tampered[index] ^= 0x5a
            guard let read = try? read(tampered) else { continue }
            #expect(contents(read) == contents(original), "byte \(index)")
            unnoticed.append(index)
        }
        // Only the clear header's modified time (file bytes 58-65) and usage count (66-69) are
        // neither sealed nor checked, in libsecret and oo7 alike.
        #expect(Set(unnoticed).isSubset(of: 58..<70), "flipped bytes that went unnoticed: \(unnoticed)")
        #expect(derivations <= 36, "the salt and the count are 36 bytes")
    }

    @Test("versions the reader does not know are refused as such")
    func unknownVersions() throws {
        let made = try Self.made()
        defer { try? FileManager.default.removeItem(at: made.directory) }
        var data = made.data
        data[17] = 1
        #expect(throws: GnomeKeyringError.unsupportedVersion("version 1.1")) {
            try GnomeKeyringFile.read(data, name: "default", password: SecureBytes(Array(Self.password.utf8)))
        }
        data = made.data
        data[16] = 2
        // A major version above 1 is read as version 0 would be, and refused there.
        do {
            _ = try GnomeKeyringFile.read(data, name: "default", password: SecureBytes(Array(Self.password.utf8)))
            Issue.record("a file of version 2 was read")
        } catch {
            guard case .unsupportedVersion(let version) = error else { Issue.record("\(error)"); return }
            #expect(version.hasPrefix("version 2.0"))
        }
    }
}

import Foundation
import GnomeKeyringFormat
import KeychainTestSupport
import SecretCrypto
import Testing

/// The reader against keyring files that the real gnome-keyring-daemon (42.1, Debian 12) wrote
/// in this run (scripts/make-gnome-keyrings.py), compared field by field with what that daemon
/// showed over D-Bus after loading them again; and against the files damaged.
@Suite struct GnomeKeyringFileTests {
    /// The files and the manifest, made once per test run.
    struct Fixtures {
        let made: GnomeKeyringFiles.Made
        var keyrings: [[String: Any]] { made.keyrings }

        func data(_ file: String) throws -> [UInt8] {
            Array(try Data(contentsOf: made.directory.appendingPathComponent(file)))
        }
    }

    static func fixtures() throws -> Fixtures { Fixtures(made: try GnomeKeyringFiles.made()) }

    static func password(_ keyring: [String: Any]) -> SecureBytes? {
        (keyring["password"] as? String).map { SecureBytes(Array($0.utf8)) }
    }

    static func bytes(_ secure: SecureBytes) -> [UInt8] { secure.withBytes { Array($0) } }

    @Test("every keyring gnome-keyring wrote reads back as gnome-keyring showed it: labels, attributes, secrets, times")
    func realFiles() throws {
        let fixtures = try Self.fixtures()
        #expect(fixtures.keyrings.count == 3)
        for expected in fixtures.keyrings {
            let file = try #require(expected["file"] as? String)
            let name = try #require(expected["name"] as? String)
            let data = try fixtures.data(file)
            #expect(GnomeKeyringFile.isEncrypted(data) == (expected["format"] as? String == "binary"), "\(file)")
            let keyring = try GnomeKeyringFile.read(data, name: name, password: Self.password(expected))
            #expect(keyring.name == name)
            if let header = expected["binary_header"] as? [String: Any] {
                #expect(keyring.label == header["label"] as? String)
                let times = [header["ctime_field"], header["mtime_field"]].compactMap { ($0 as? NSNumber)?.uint64Value }
                #expect(keyring.created == times.filter { $0 > 0 }.min() ?? 0, "\(file)")
                #expect(keyring.modified == times.max(), "\(file)")
            } else {
                #expect(keyring.label == expected["label"] as? String)
                #expect(keyring.created == (expected["created"] as? NSNumber)?.uint64Value)
                #expect(keyring.modified == (expected["modified"] as? NSNumber)?.uint64Value)
            }
            let items = try #require(expected["items"] as? [[String: Any]])
            #expect(keyring.items.count == items.count, "\(file)")
            for item in items {
                let label = try #require(item["label"] as? String)
                // gnome-keyring's own markers of integer attributes are not part of the item.
                let attributes = (item["attributes"] as? [String: String] ?? [:]).filter { !$0.key.hasPrefix("gkr:compat:") }
                let found = keyring.items.filter { $0.label == label && $0.attributes == attributes }
                #expect(found.count == 1, "\(file): \(label) with \(attributes) not found in \(keyring.items.map(\.attributes))")
                guard let read = found.first else { continue }
                let secret = try #require(Data(base64Encoded: item["secret"] as? String ?? ""))
                #expect(Self.bytes(read.secret) == Array(secret), "\(file): the secret of \(label)")
                #expect(read.created == (item["created"] as? NSNumber)?.uint64Value, "\(file): \(label)")
                #expect(read.modified == (item["modified"] as? NSNumber)?.uint64Value, "\(file): \(label)")
            }
        }
        let big = try GnomeKeyringFile.read(try fixtures.data("login.keyring"), name: "login", password: SecureBytes(Array("login-pw".utf8)))
        #expect(big.items.contains { $0.secret.count == 1 << 20 }, "the 1 MiB secret")
        #expect(big.items.contains { $0.attributes["port"] == "8080" && $0.attributes["big"] == "4294967295" }, "integer attributes")
    }

    @Test("a wrong or missing password is told apart from damage")
    func passwords() throws {
        let data = try Self.fixtures().data("work.keyring")
        #expect(throws: GnomeKeyringError.wrongPassword) { try GnomeKeyringFile.read(data, name: "work", password: SecureBytes(Array("login-pw".utf8))) }
        #expect(throws: GnomeKeyringError.wrongPassword) { try GnomeKeyringFile.read(data, name: "work", password: SecureBytes(count: 0)) }
        #expect(throws: GnomeKeyringError.passwordRequired) { try GnomeKeyringFile.read(data, name: "work", password: nil) }
        // A key file needs none; a password given is not used.
        let open = try GnomeKeyringFile.read(try Self.fixtures().data("open.keyring"), name: "open", password: SecureBytes(count: 0))
        #expect(open.items.count == 3)
    }

    @Test("every truncation of a binary keyring, and every flipped byte in it, is an error, never a wrong read")
    func damagedBinary() throws {
        let data = try Self.fixtures().data("work.keyring")
        let password = SecureBytes(Array("work-pw".utf8))
        let original = try GnomeKeyringFile.read(data, name: "work", password: password)
        for length in 0..<data.count {
            let result = Result { try GnomeKeyringFile.read(Array(data.prefix(length)), name: "work", password: password) }
            guard case .failure(let error) = result else {
                Issue.record("a file cut to \(length) of \(data.count) bytes was read")
                continue
            }
            #expect(error is GnomeKeyringError)
        }
        for index in data.indices {
            var tampered = data
            tampered[index] ^= 0x5a
            guard let read = try? GnomeKeyringFile.read(tampered, name: "work", password: password) else { continue }
            // The encrypted part is checked by its MD5; the unencrypted header is not (nor is it
            // in gnome-keyring): its label, times, lock settings, the hashed attribute values and
            // the item types, which give an item without `xdg:schema` its schema, may change.
            #expect(read.items.map { Self.bytes($0.secret) } == original.items.map { Self.bytes($0.secret) }, "byte \(index)")
            #expect(read.items.map { $0.attributes.filter { $0.key != "xdg:schema" } }
                == original.items.map { $0.attributes.filter { $0.key != "xdg:schema" } }, "byte \(index)")
        }
    }

    @Test("versions, ciphers and formats the reader does not know are refused as such")
    func unknownFormats() throws {
        var data = try Self.fixtures().data("work.keyring")
        data[16] = 2  // 1 is version 1 (Version1FileTests)
        #expect(throws: GnomeKeyringError.unsupportedVersion("version 2.0, cipher 0, hash 0")) {
            try GnomeKeyringFile.read(data, name: "work", password: SecureBytes(Array("work-pw".utf8)))
        }
        #expect(throws: GnomeKeyringError.notAKeyring) { try GnomeKeyringFile.read(Array("[other]\nx=1\n".utf8), name: "x", password: nil) }
        #expect(throws: GnomeKeyringError.notAKeyring) { try GnomeKeyringFile.read([0xff, 0xfe, 0], name: "x", password: nil) }
        #expect(throws: GnomeKeyringError.notAKeyring) { try GnomeKeyringFile.read([], name: "x", password: nil) }
    }

    @Test("the key file of a keyring without a password: escapes, binary secrets, integer attributes, bad lines")
    func keyFiles() throws {
        let text = """
            [keyring]
            display-name=My\\skeyring
            ctime=100
            mtime=200
            lock-on-idle=false

            [7]
            item-type=1
            display-name=Line\\none
            secret=a\\tb
            mtime=300
            ctime=250

            [7:attribute0]
            name=port
            type=uint32
            value=22

            [8]
            display-name=Bytes
            binary-secret=00ff10

            """
        let keyring = try GnomeKeyringFile.read(Array(text.utf8), name: "mine", password: nil)
        #expect(keyring.label == "My keyring" && keyring.created == 100 && keyring.modified == 200)
        #expect(keyring.items.count == 2)
        #expect(keyring.items[0].label == "Line\none")
        #expect(Self.bytes(keyring.items[0].secret) == Array("a\tb".utf8))
        #expect(keyring.items[0].attributes == ["port": "22", "xdg:schema": "org.gnome.keyring.NetworkPassword"])
        #expect(keyring.items[0].created == 250 && keyring.items[0].modified == 300)
        #expect(Self.bytes(keyring.items[1].secret) == [0x00, 0xff, 0x10])
        #expect(throws: GnomeKeyringError.self) {
            try GnomeKeyringFile.read(Array("[keyring]\n[1]\nbinary-secret=0g\n".utf8), name: "x", password: nil)
        }
        #expect(throws: GnomeKeyringError.self) {
            try GnomeKeyringFile.read(Array("[keyring]\n[1]\nsecret=bad\\q\n".utf8), name: "x", password: nil)
        }
    }
}

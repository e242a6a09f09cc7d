import Foundation
import KeychainCore
import SecretCrypto
import Testing

@testable import SecretCtl

/// KeePass databases (``KDBXImport``): files made here by the real `keepassxc-cli` (KeePassXC
/// 2.7; its `db-create` writes KDBX 3.1 with AES-KDF, and its `import` of an XML document KDBX
/// 4.0 or 4.1, AES-256 with AES-KDF, gzip, the ChaCha20 inner stream), and for what it cannot
/// choose (Argon2d/Argon2id, ChaCha20, Twofish, no compression, Salsa20 in KDBX 4) files
/// written by ``KDBXTestFile`` and by ``KDBXExport``.
///
/// keepassxc-cli comes with the Debian package keepassxc (the Makefile's DEB_TEST).
@Suite struct KDBXImportTests {
    static let network = "org.gnome.keyring.NetworkPassword"
    static let generic = "org.freedesktop.Secret.Generic"

    /// A directory of its own per test, removed with the suite's instance.
    final class Scratch {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kdbx-\(UUID().uuidString.prefix(8))")
        deinit { try? FileManager.default.removeItem(at: url) }
    }

    let scratch = Scratch()
    var directory: URL { scratch.url }

    init() throws {
        try FileManager.default.createDirectory(at: scratch.url, withIntermediateDirectories: true)
    }

    /// Runs keepassxc-cli with `input` on standard input (passwords are never arguments).
    @discardableResult
    func keepassxc(_ arguments: [String], input: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/keepassxc-cli")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = ["HOME": directory.path, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "QT_QPA_PLATFORM": "offscreen"]
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandLineError.failure("keepassxc-cli \(arguments.joined(separator: " ")): \(errors)", status: .failed)
        }
        return String(decoding: output, as: UTF8.self)
    }

    func read(_ name: String) throws -> Data { try Data(contentsOf: directory.appendingPathComponent(name)) }

    func open(_ name: String, password: String?, keyFile: String? = nil) throws -> KDBXImport.Contents {
        try KDBXImport.contents(
            try read(name), key: KDBXImport.Key(password: password.map { Data($0.utf8) }, keyFile: try keyFile.map { try read($0) }))
    }

    // MARK: - keepassxc-cli's own files

    @Test("keepassxc-cli db-create, add, mkdir, edit (KDBX 3.1, Salsa20), then rm (4.1): every field lands; the recycle bin and history are left out")
    func keepassxcDatabase() throws {
        try keepassxc(["db-create", "-q", "-p", "db.kdbx"], input: "db pass ✓\ndb pass ✓\n")
        try keepassxc(
            ["add", "-q", "-u", "alice", "--url", "https://git.example.org:8443/login", "--notes", "recovery codes\nin the safe", "-p", "db.kdbx", "Forge"],
            input: "db pass ✓\nold-password\n")
        try keepassxc(["edit", "-q", "-p", "db.kdbx", "Forge"], input: "db pass ✓\ns3cr3t, \"quoted\" <&> ✓\n")
        try keepassxc(["mkdir", "-q", "db.kdbx", "Work"], input: "db pass ✓\n")
        try keepassxc(["mkdir", "-q", "db.kdbx", "Work/Servers"], input: "db pass ✓\n")
        try keepassxc(["add", "-q", "-u", "admin", "-p", "db.kdbx", "Work/Servers/Router"], input: "db pass ✓\npässwörd\n")
        try keepassxc(["add", "-q", "--notes", "the key is 0xC0FFEE", "db.kdbx", "Work/Wifi"], input: "db pass ✓\n")
        try keepassxc(["add", "-q", "-u", "nobody", "db.kdbx", "Empty"], input: "db pass ✓\n")
        try keepassxc(["add", "-q", "-u", "old", "-p", "db.kdbx", "Binned"], input: "db pass ✓\ngone\n")
        #expect(try read("db.kdbx")[8..<12] == Data([1, 0, 3, 0]))  // KDBX 3.1
        let before = try open("db.kdbx", password: "db pass ✓")
        #expect(before.version == "3.1")
        #expect(before.recycled == 0)
        #expect(before.items.map(\.label).sorted() == ["Binned", "Forge", "Router", "Wifi"])
        // Moving an entry to the recycle bin records its previous group, which KDBX 4.1 holds.
        try keepassxc(["rm", "-q", "db.kdbx", "Binned"], input: "db pass ✓\n")
        #expect(try read("db.kdbx")[8..<12] == Data([1, 0, 4, 0]))

        let contents = try open("db.kdbx", password: "db pass ✓")
        #expect(contents.version == "4.1")
        #expect(contents.empty == 1)
        #expect(contents.recycled == 1)
        #expect(contents.items.filter { $0.label != "Binned" } == before.items.filter { $0.label != "Binned" })
        let byLabel = Dictionary(uniqueKeysWithValues: contents.items.map { ($0.label, $0) })
        #expect(byLabel.keys.sorted() == ["Forge", "Router", "Wifi"])
        #expect(byLabel["Forge"]?.attributes == [
            "xdg:schema": Self.network, "server": "git.example.org", "user": "alice", "protocol": "https", "port": "8443",
            "notes": "recovery codes\nin the safe",
        ])
        #expect(byLabel["Forge"]?.secret == Data("s3cr3t, \"quoted\" <&> ✓".utf8))
        #expect(byLabel["Router"]?.attributes == [
            "xdg:schema": Self.generic, "service": "Router", "account": "admin", "username": "admin", "folder": "Work/Servers",
        ])
        #expect(byLabel["Router"]?.secret == Data("pässwörd".utf8))
        #expect(byLabel["Wifi"]?.attributes["folder"] == "Work")
        #expect(byLabel["Wifi"]?.secret == Data("the key is 0xC0FFEE".utf8))

        #expect(throws: Self.wrongPassword) { try open("db.kdbx", password: "db pass") }
    }

    /// An XML document for `keepassxc-cli import`: custom fields (two protected), a TOTP
    /// setting, tags, a history entry, nested groups and a recycle bin. Entry custom data makes
    /// KeePassXC write KDBX 4; `QualityCheck` (with `minor41`) makes it 4.1.
    static func document(minor41: Bool) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <KeePassFile>
        <Meta><Generator>KeePassXC</Generator><RecycleBinEnabled>True</RecycleBinEnabled><RecycleBinUUID>AAAAAAAAAAAAAAAAAAAAAw==</RecycleBinUUID></Meta>
        <Root><Group><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID><Name>Passwords</Name>
        <Entry><UUID>AAAAAAAAAAAAAAAAAAAAEA==</UUID><Tags>work;git</Tags>\(minor41 ? "<QualityCheck>False</QualityCheck>" : "")
        <CustomData><Item><Key>k</Key><Value>v</Value></Item></CustomData>
        <String><Key>Title</Key><Value>Forge</Value></String>
        <String><Key>UserName</Key><Value>clara</Value></String>
        <String><Key>Password</Key><Value ProtectInMemory="True">s3cr3t &lt;&amp;&gt; ✓</Value></String>
        <String><Key>URL</Key><Value>https://git.example.org:8443/login</Value></String>
        <String><Key>Notes</Key><Value>two
        lines</Value></String>
        <String><Key>otp</Key><Value ProtectInMemory="True">otpauth://totp/forge?secret=JBSWY3DPEHPK3PXP</Value></String>
        <String><Key>PIN</Key><Value ProtectInMemory="True">4711</Value></String>
        <String><Key>Colour</Key><Value>blue</Value></String>
        <History><Entry><UUID>AAAAAAAAAAAAAAAAAAAAEA==</UUID>
        <String><Key>Title</Key><Value>Forge</Value></String>
        <String><Key>Password</Key><Value ProtectInMemory="True">old-password</Value></String>
        </Entry></History>
        </Entry>
        <Group><UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID><Name>Work</Name>
        <Group><UUID>AAAAAAAAAAAAAAAAAAAABA==</UUID><Name>Servers</Name>
        <Entry><UUID>AAAAAAAAAAAAAAAAAAAAEQ==</UUID>
        <String><Key>Title</Key><Value>Router</Value></String>
        <String><Key>UserName</Key><Value>admin</Value></String>
        <String><Key>Password</Key><Value ProtectInMemory="True">pässwörd</Value></String>
        </Entry></Group></Group>
        <Group><UUID>AAAAAAAAAAAAAAAAAAAAAw==</UUID><Name>Recycle Bin</Name>
        <Entry><UUID>AAAAAAAAAAAAAAAAAAAAEg==</UUID>
        <String><Key>Title</Key><Value>Binned</Value></String>
        <String><Key>Password</Key><Value ProtectInMemory="True">gone</Value></String>
        </Entry></Group>
        </Group></Root></KeePassFile>
        """
    }

    /// What ``document(minor41:)`` imports as.
    static let forge = ExportFile.Item(
        label: "Forge",
        attributes: [
            "xdg:schema": network, "server": "git.example.org", "user": "clara", "protocol": "https", "port": "8443",
            "notes": "two\nlines", "otpauth": "otpauth://totp/forge?secret=JBSWY3DPEHPK3PXP", "field:PIN": "4711",
            "field:Colour": "blue", "tags": "git,work",
        ],
        secret: Data("s3cr3t <&> ✓".utf8))
    static let router = ExportFile.Item(
        label: "Router",
        attributes: ["xdg:schema": generic, "service": "Router", "account": "admin", "username": "admin", "folder": "Work/Servers"],
        secret: Data("pässwörd".utf8))

    @Test("keepassxc-cli import (KDBX 4.0 and 4.1, AES-KDF, gzip, ChaCha20 inner stream): fields, TOTP, tags, groups; recycle bin and history left out", arguments: [false, true])
    func keepassxcKDBX4(minor41: Bool) throws {
        try Self.document(minor41: minor41).write(to: directory.appendingPathComponent("in.xml"), atomically: true, encoding: .utf8)
        try keepassxc(["import", "-q", "-p", "in.xml", "db.kdbx"], input: "pw\npw\n")
        #expect(try read("db.kdbx")[8..<12] == Data([minor41 ? 1 : 0, 0, 4, 0]))
        let contents = try open("db.kdbx", password: "pw")
        #expect(contents.version == (minor41 ? "4.1" : "4.0"))
        #expect(contents.recycled == 1)
        #expect(contents.items.sorted { $0.label < $1.label } == [Self.forge, Self.router])
        #expect(throws: Self.wrongPassword) { try open("db.kdbx", password: "pW") }
    }

    @Test("a key file (KeePassXC's XML 2.0), with a password or alone; the wrong one, or none, is a wrong key")
    func keyFile() throws {
        try keepassxc(["db-create", "-q", "-p", "--set-key-file", "db.keyx", "db.kdbx"], input: "pw\npw\n")
        try keepassxc(["add", "-q", "-k", "db.keyx", "-u", "alice", "-p", "db.kdbx", "Mail"], input: "pw\nmail-password\n")
        #expect(String(decoding: try read("db.keyx"), as: UTF8.self).contains("<Version>2.0</Version>"))
        #expect(try open("db.kdbx", password: "pw", keyFile: "db.keyx").items.map(\.secret) == [Data("mail-password".utf8)])
        #expect(throws: Self.wrongPassword) { try open("db.kdbx", password: "pw") }
        try keepassxc(["db-create", "-q", "--set-key-file", "other.keyx", "alone.kdbx"], input: "")
        try keepassxc(["add", "-q", "--no-password", "-k", "other.keyx", "-p", "alone.kdbx", "Disk"], input: "disk-password\n")
        #expect(try open("alone.kdbx", password: nil, keyFile: "other.keyx").items.map(\.secret) == [Data("disk-password".utf8)])
        #expect(throws: Self.wrongPassword) { try open("alone.kdbx", password: nil, keyFile: "db.keyx") }
        #expect(throws: Self.wrongPassword) { try open("db.kdbx", password: "pw", keyFile: "other.keyx") }

        // Other key files: 32 raw bytes, 64 hex digits, or any file by its SHA-256.
        for (name, contents) in [
            ("raw.key", Data(Gcrypt.randomBytes(count: 32))), ("hex.key", Data(String(repeating: "0123456789abcdef", count: 4).utf8)),
            ("any.key", Data("a key file of any other content\n".utf8)),
        ] {
            try contents.write(to: directory.appendingPathComponent(name))
            try keepassxc(["db-create", "-q", "-p", "--set-key-file", name, "\(name).kdbx"], input: "pw\npw\n")
            try keepassxc(["add", "-q", "-k", name, "-p", "\(name).kdbx", "Entry"], input: "pw\n\(name)-secret\n")
            #expect(try open("\(name).kdbx", password: "pw", keyFile: name).items.map(\.secret) == [Data("\(name)-secret".utf8)])
        }
    }

    // MARK: - What keepassxc-cli cannot choose

    static let written: [KDBXTestFile] = {
        var files: [KDBXTestFile] = []
        for kdf in KDBXTestFile.KDF.allCases {
            for cipher in KDBXTestFile.Cipher.allCases {
                files.append(KDBXTestFile(minor: 0, kdf: kdf, cipher: cipher, gzip: cipher != .twofish, innerStream: kdf == .aes ? 2 : 3))
            }
        }
        files.append(KDBXTestFile(minor: 1, kdf: .argon2id, cipher: .chaCha20, gzip: false, innerStream: 2))
        return files
    }()

    @Test("KDBX 4 written here: Argon2d, Argon2id and AES-KDF; AES-256, ChaCha20 and Twofish; gzip or not; ChaCha20 or Salsa20 inner stream", arguments: written)
    func writtenHere(file: KDBXTestFile) throws {
        let bytes = try file.bytes(password: "pässword") { protect in
            """
            <?xml version="1.0" encoding="utf-8" standalone="yes"?>
            <!-- written by a test -->
            <KeePassFile><Meta><Generator>KeePass</Generator><RecycleBinUUID>AAAAAAAAAAAAAAAAAAAAAw==</RecycleBinUUID></Meta>
            <Root><Group><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID><Name>Database</Name>
            <Entry><String><Key>Title</Key><Value>Forge</Value></String>
            <String><Key>UserName</Key><Value>clara</Value></String>
            <String><Key>Password</Key><Value Protected="True">\(protect("s3cr3t <&> ✓"))</Value></String>
            <String><Key>URL</Key><Value>https://git.example.org:8443/login</Value></String>
            <String><Key>Notes</Key><Value><![CDATA[two]]>&#10;lines</Value></String>
            <String><Key>otp</Key><Value Protected="True">\(protect("otpauth://totp/forge?secret=JBSWY3DPEHPK3PXP"))</Value></String>
            <String><Key>PIN</Key><Value Protected="True">\(protect("4711"))</Value></String>
            <String><Key>Colour</Key><Value>blue</Value></String><Tags>work, git</Tags>
            <History><Entry><String><Key>Password</Key><Value Protected="True">\(protect("old"))</Value></String></Entry></History>
            </Entry>
            <Group><UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID><Name>Work</Name><Group><Name>Servers</Name>
            <Entry><String><Key>Title</Key><Value>Router</Value></String><String><Key>UserName</Key><Value>admin</Value></String>
            <String><Key>Password</Key><Value Protected="True">\(protect("pässwörd"))</Value></String></Entry></Group></Group>
            <Group><UUID>AAAAAAAAAAAAAAAAAAAAAw==</UUID><Name>Recycle Bin</Name>
            <Entry><String><Key>Password</Key><Value Protected="True">\(protect("gone"))</Value></String></Entry></Group>
            </Group></Root></KeePassFile>
            """
        }
        let contents = try KDBXImport.contents(Data(bytes), key: KDBXImport.Key(password: Data("pässword".utf8)))
        #expect(contents.version == "4.\(file.minor)")
        #expect(contents.recycled == 1)
        var forge = Self.forge
        forge.attributes["tags"] = "work,git"
        #expect(contents.items == [forge, Self.router])
        #expect(throws: Self.wrongPassword) { try KDBXImport.contents(Data(bytes), key: KDBXImport.Key(password: Data("password".utf8))) }
    }

    @Test("secretctl's own export (Argon2id, AES-256, no compression) imports as the items it was made of")
    func ownExport() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let entries = [
            KDBXExport.Entry(
                collection: "login", label: "alice@example.com",
                attributes: ["xdg:schema": Self.network, "server": "example.com", "user": "alice", "protocol": "https", "port": "8443", "notes": "n ✓"],
                secret: Data("pa,ss<&>\"w ✓".utf8), created: now, modified: now),
            KDBXExport.Entry(
                collection: "work", label: "Bob's token", attributes: ["xdg:schema": Self.generic, "service": "org.example.ci", "account": "bob"],
                secret: Data("two\nlines".utf8), created: now, modified: now),
        ]
        let (bytes, leftOut) = try KDBXExport.database(entries, passphrase: Data("export pass".utf8), parameters: .testing)
        #expect(leftOut == 0)
        let contents = try KDBXImport.contents(Data(bytes), key: KDBXImport.Key(password: Data("export pass".utf8)))
        #expect(contents.version == "4.0")
        #expect(contents.items.sorted { $0.label < $1.label } == entries.reversed().map { ExportFile.Item(label: $0.label, attributes: $0.attributes, secret: $0.secret) })
    }

    // MARK: - Bad input

    static let wrongPassword = CommandLineError.failure(
        "wrong password (or key file) for this KeePass database; nothing was imported", status: .accessDenied)

    func damaged(_ detail: String) -> CommandLineError {
        .failure("this KeePass database is damaged: \(detail); nothing was imported", status: .usage)
    }

    @Test("a truncated file, a flipped byte in a block or in the header, and other versions are refused with a clear message")
    func badInput() throws {
        let file = KDBXTestFile(kdf: .argon2id, cipher: .aes256, gzip: true, innerStream: 3, blockSize: 64)
        let bytes = try file.bytes(password: "pw") { protect in
            "<KeePassFile><Root><Group><Name>R</Name><Entry><String><Key>Title</Key><Value>T</Value></String><String><Key>Password</Key><Value Protected=\"True\">\(protect("p"))</Value></String></Entry></Group></Root></KeePassFile>"
        }
        let key = KDBXImport.Key(password: Data("pw".utf8))
        #expect(try KDBXImport.contents(Data(bytes), key: key).items.count == 1)
        #expect(KDBXImport.isDatabase(Data(bytes)))

        for length in [4, 11, 100, bytes.count - 200, bytes.count - 1] {
            #expect(throws: damaged("it is truncated")) { try KDBXImport.contents(Data(bytes.prefix(length)), key: key) }
        }
        // The header ends 64 bytes (its SHA-256 and HMAC) before the first block's HMAC.
        let endField: [UInt8] = [0, 4, 0, 0, 0, 13, 10, 13, 10]
        let end = try #require((12..<(bytes.count - 9)).first { (index: Int) -> Bool in Array(bytes[index..<(index + 9)]) == endField })
        let headerLength = end + 9
        var block = bytes
        block[headerLength + 64 + 36 + 64 + 36 + 5] ^= 0x20  // inside the second block's data
        #expect(throws: damaged("block 1 fails its check")) { try KDBXImport.contents(Data(block), key: key) }
        var header = bytes
        header[headerLength - 12] ^= 1
        #expect(throws: damaged("its header fails its checksum")) { try KDBXImport.contents(Data(header), key: key) }
        var headerMAC = bytes
        headerMAC[headerLength + 40] ^= 1
        #expect(throws: Self.wrongPassword) { try KDBXImport.contents(Data(headerMAC), key: key) }

        var version5 = bytes
        version5[10] = 5
        #expect(throws: CommandLineError.failure(
            "this KeePass database is KDBX 5.0, which secretctl does not read (it reads 3.1, 4.0 and 4.1)", status: .usage)) {
            try KDBXImport.contents(Data(version5), key: key)
        }
        var keePass1 = bytes
        keePass1[4] = 0x65
        #expect(KDBXImport.isDatabase(Data(keePass1)))
        #expect(throws: CommandLineError.failure(
            "this is a KeePass 1 database (.kdb), which secretctl does not read; open it in KeePassXC and save it as KDBX 4", status: .usage)) {
            try KDBXImport.contents(Data(keePass1), key: key)
        }
        #expect(!KDBXImport.isDatabase(Data("url,username,password\n".utf8)))
        #expect(!KDBXImport.isDatabase(Data([0x03, 0xD9, 0xA2, 0x9A])))
    }

    @Test("a KDBX 3.1 file from keepassxc-cli: truncated, a flipped byte in the payload, a wrong password")
    func badInput31() throws {
        try keepassxc(["db-create", "-q", "-p", "db.kdbx"], input: "pw\npw\n")
        try keepassxc(["add", "-q", "-p", "db.kdbx", "Entry"], input: "pw\nsecret\n")
        let bytes = Array(try read("db.kdbx"))
        let key = KDBXImport.Key(password: Data("pw".utf8))
        #expect(throws: Self.wrongPassword) { try KDBXImport.contents(Data(bytes), key: KDBXImport.Key(password: Data("wrong".utf8))) }
        #expect(throws: CommandLineError.self) { try KDBXImport.contents(Data(bytes.dropLast(16)), key: key) }
        var flipped = bytes
        flipped[bytes.count - 40] ^= 1  // the last block of ciphertext: garbled plain text, or bad padding
        #expect(throws: CommandLineError.self) { try KDBXImport.contents(Data(flipped), key: key) }
        // A changed header field that the key does not depend on (the inner stream's key): the
        // header hash inside the payload tells.
        var offset = 12
        while bytes[offset] != 8 { offset += 3 + Int(bytes[offset + 1]) + Int(bytes[offset + 2]) << 8 }
        var header = bytes
        header[offset + 3] ^= 1
        #expect(throws: damaged("its header does not match its payload")) { try KDBXImport.contents(Data(header), key: key) }
    }

    // MARK: - The XML reader

    @Test("the XML reader: entities, character references, CDATA, comments; a DTD, mismatched tags and trailing content are refused")
    func xml() throws {
        let root = try XMLReader.parse(Array("""
            \u{FEFF}<?xml version="1.0"?><!-- c --><a x='1' y="&lt;&#65;&#x42;&quot;"><b>t &amp; u<![CDATA[<raw>]]></b><c/><b>2</b></a>
            <!-- after -->
            """.utf8))
        #expect(root.name == "a")
        #expect(root.attributes == ["x": "1", "y": "<AB\""])
        #expect(root.children("b").map(\.text) == ["t & u<raw>", "2"])
        #expect(root.child("c")?.text == "")
        // KeePass 2 writes CRLF line ends ("\r\n" is one Character in Swift).
        #expect(try XMLReader.parse(Array("<?xml version=\"1.0\"?>\r\n<a>\r\n\t<b>x</b>\r\n</a>\r\n".utf8)).child("b")?.text == "x")
        for bad in [
            "<!DOCTYPE a [<!ENTITY x \"y\">]><a/>", "<a><b></a></b>", "<a/><b/>", "<a>", "text", "<a>&bogus;</a>", "<a x=1/>", "<a></a>x",
            String(repeating: "<a>", count: 600) + String(repeating: "</a>", count: 600),
        ] {
            #expect(throws: XMLReader.Failure.self, "\(bad.prefix(30))") { try XMLReader.parse(Array(bad.utf8)) }
        }
    }

    @Test("gzip: what Zlib.gzip writes comes back; a damaged stream and one over the limit are refused")
    func gzip() throws {
        let text = Array(String(repeating: "KeePass ✓ ", count: 5000).utf8)
        let compressed = Zlib.gzip(text)
        #expect(try compressed.withUnsafeBytes { try Zlib.gunzip($0, limit: 1 << 20) } == text)
        #expect(throws: Zlib.Failure.self) { try compressed.withUnsafeBytes { try Zlib.gunzip($0, limit: 1000) } }
        #expect(throws: Zlib.Failure.self) { try compressed.dropLast(10).withUnsafeBytes { try Zlib.gunzip($0, limit: 1 << 20) } }
        var damaged = compressed
        damaged[20] ^= 0xFF
        #expect(throws: Zlib.Failure.self) { try damaged.withUnsafeBytes { try Zlib.gunzip($0, limit: 1 << 20) } }
    }
}

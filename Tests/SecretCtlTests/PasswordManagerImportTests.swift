import Foundation
import KeychainCore
import Testing

@testable import SecretCtl

/// Password managers' exports (``PasswordManagerImport``), told by their content and turned
/// into items by ``ImportedLogin``'s rule. The files are written here in each manager's
/// documented layout (none of the managers runs on this machine).
@Suite struct PasswordManagerImportTests {
    static let network = "org.gnome.keyring.NetworkPassword"
    static let generic = "org.freedesktop.Secret.Generic"

    static let bitwardenJSON = #"""
        {
          "encrypted": false,
          "folders": [{ "id": "f1", "name": "Work" }],
          "items": [
            { "id": "a", "organizationId": null, "folderId": "f1", "type": 1, "reprompt": 0, "name": "Forge",
              "notes": "recovery codes in the safe", "favorite": false,
              "fields": [{ "name": "PIN", "value": "4711", "type": 1, "linkedId": null }],
              "login": { "uris": [{ "match": null, "uri": "https://git.example.org:8443/login" }],
                         "username": "clara", "password": "s3cr3t, \"quoted\"", "totp": "otpauth://totp/x?secret=JBSWY3DP",
                         "fido2Credentials": [] },
              "collectionIds": null, "revisionDate": "2026-11-01T10:00:00.000Z", "creationDate": "2026-01-01T10:00:00.000Z",
              "deletedDate": null, "passwordHistory": null },
            { "id": "b", "folderId": null, "type": 1, "name": "Router", "notes": null,
              "login": { "uris": [], "username": "admin", "password": "pässwörd ✓", "totp": null } },
            { "id": "c", "folderId": null, "type": 2, "name": "Wifi", "notes": "the key is 0xC0FFEE", "secureNote": { "type": 0 } },
            { "id": "d", "folderId": null, "type": 3, "name": "Visa", "card": { "number": "4111111111111111", "code": "123" } },
            { "id": "e", "folderId": null, "type": 4, "name": "Me", "identity": { "firstName": "Clara" } },
            { "id": "f", "folderId": null, "type": 1, "name": "Nothing", "login": { "uris": [], "username": "x" } },
            { "id": "g", "folderId": null, "type": 1, "name": "Binned", "deletedDate": "2026-11-02T10:00:00.000Z",
              "login": { "password": "old" } }
          ]
        }
        """#

    @Test("Bitwarden JSON: logins with a URL become internet passwords, others and notes generic ones; cards and identities are counted")
    func bitwarden() throws {
        let data = Data(Self.bitwardenJSON.utf8)
        #expect(PasswordManagerImport.source(of: data) == .bitwardenJSON)
        let contents = try PasswordManagerImport.contents(data, source: .bitwardenJSON)
        #expect(contents.empty == 1)
        #expect(contents.otherKinds == 2)
        #expect(contents.items == [
            ExportFile.Item(
                label: "Forge",
                attributes: [
                    "xdg:schema": Self.network, "server": "git.example.org", "user": "clara", "protocol": "https", "port": "8443",
                    "notes": "recovery codes in the safe", "otpauth": "otpauth://totp/x?secret=JBSWY3DP", "folder": "Work",
                    "field:PIN": "4711",
                ],
                secret: Data("s3cr3t, \"quoted\"".utf8)),
            ExportFile.Item(
                label: "Router", attributes: ["xdg:schema": Self.generic, "service": "Router", "account": "admin", "username": "admin"],
                secret: Data("pässwörd ✓".utf8)),
            ExportFile.Item(
                label: "Wifi", attributes: ["xdg:schema": Self.generic, "service": "Wifi", "account": "", "username": ""],
                secret: Data("the key is 0xC0FFEE".utf8)),
        ])
    }

    @Test("Bitwarden JSON: an encrypted export, a JSON file of something else and broken JSON are refused, without quoting the file")
    func bitwardenRefusals() {
        for encrypted in [#"{"encrypted": true, "encKeyValidation_DO_NOT_EDIT": "2.x", "data": "2.y"}"#,
                          #"{"encrypted": true, "passwordProtected": true, "salt": "s", "data": "2.y"}"#] {
            #expect(throws: CommandLineError.failure(
                "this Bitwarden export is encrypted; export the vault again as \"JSON\" (not \"JSON (Encrypted)\")", status: .usage)) {
                try PasswordManagerImport.contents(Data(encrypted.utf8), source: .bitwardenJSON)
            }
        }
        #expect(throws: CommandLineError.failure("this JSON file has no \"items\": not a Bitwarden export", status: .usage)) {
            try PasswordManagerImport.contents(Data(#"{"name": "package.json"}"#.utf8), source: .bitwardenJSON)
        }
        let truncated = String(Self.bitwardenJSON.prefix(400))
        do {
            _ = try PasswordManagerImport.contents(Data(truncated.utf8), source: .bitwardenJSON)
            Issue.record("a truncated export was read")
        } catch {
            #expect(error.detail.hasPrefix("this JSON file is not a Bitwarden export that can be read"))
            #expect(!error.detail.contains("s3cr3t"))
        }
        let wrongType = #"{"items": [{"type": 1, "name": "x", "login": {"password": 42}}]}"#
        do {
            _ = try PasswordManagerImport.contents(Data(wrongType.utf8), source: .bitwardenJSON)
            Issue.record("a password of the wrong type was read")
        } catch {
            #expect(error.detail == "this JSON file is not a Bitwarden export that can be read (unexpected value at items.0.login.password)")
        }
    }

    @Test("Apple Passwords' CSV (with a byte order mark): notes and the OTP setting kept, a login without a URL is generic")
    func apple() throws {
        let text = "\u{FEFF}Title,URL,Username,Password,Notes,OTPAuth\r\n"
            + "example.com (alice),https://example.com/,alice,\"pa,ss\",\"two\nlines\",otpauth://totp/e?secret=ABC\r\n"
            + "App,,bob,hunter2,,\r\n" + "Empty,https://e.example/,carol,,,\r\n"
        let data = Data(text.utf8)
        #expect(PasswordManagerImport.source(of: data) == .apple)
        let contents = try PasswordManagerImport.contents(data, source: .apple)
        #expect(contents.empty == 1)
        #expect(contents.items == [
            ExportFile.Item(
                label: "example.com (alice)",
                attributes: [
                    "xdg:schema": Self.network, "server": "example.com", "user": "alice", "protocol": "https", "notes": "two\nlines",
                    "otpauth": "otpauth://totp/e?secret=ABC",
                ],
                secret: Data("pa,ss".utf8)),
            ExportFile.Item(
                label: "App", attributes: ["xdg:schema": Self.generic, "service": "App", "account": "bob", "username": "bob"],
                secret: Data("hunter2".utf8)),
        ])
    }

    @Test("1Password's CSV: tags kept; archived entries are imported too")
    func onePassword() throws {
        let text = "Title,Url,Username,Password,OTPAuth,Favorite,Archived,Tags,Notes\n"
            + "Bank,https://bank.example,alice,s3cret,,true,false,finance,call first\n" + "Old,http://old.example:8080,bob,p,,false,true,,\n"
        let data = Data(text.utf8)
        #expect(PasswordManagerImport.source(of: data) == .onePassword)
        let contents = try PasswordManagerImport.contents(data, source: .onePassword)
        #expect(contents.items.map(\.label) == ["Bank", "Old"])
        #expect(contents.items[0].attributes["tags"] == "finance")
        #expect(contents.items[0].attributes["notes"] == "call first")
        #expect(contents.items[1].attributes["port"] == "8080")
        #expect(contents.items[1].attributes["protocol"] == "http")
    }

    @Test("Bitwarden's CSV: logins and notes, custom fields by name, cards counted")
    func bitwardenCSV() throws {
        let text = "folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\n"
            + "Work,1,login,Forge,,\"PIN: 4711\nColour: blue\",0,\"https://git.example.org,https://other.example\",clara,s3cr3t,\n"
            + ",,note,Wifi,key 0xC0FFEE,,0,,,,\n" + ",,card,Visa,,,0,,,,\n"
        let data = Data(text.utf8)
        #expect(PasswordManagerImport.source(of: data) == .bitwardenCSV)
        let contents = try PasswordManagerImport.contents(data, source: .bitwardenCSV)
        #expect(contents.otherKinds == 1)
        #expect(contents.items.map(\.label) == ["Forge", "Wifi"])
        #expect(contents.items[0].attributes["server"] == "git.example.org")
        #expect(contents.items[0].attributes["field:PIN"] == "4711")
        #expect(contents.items[0].attributes["field:Colour"] == "blue")
        #expect(contents.items[0].attributes["folder"] == "Work")
        #expect(contents.items[1].secret == Data("key 0xC0FFEE".utf8))
    }

    @Test("a browser's CSV and other files are not taken for a manager's export")
    func notAManager() {
        #expect(PasswordManagerImport.source(of: Data("name,url,username,password\nA,https://a.example,u,p\n".utf8)) == nil)
        #expect(PasswordManagerImport.source(of: Data("url,username,password,httpRealm,formActionOrigin,guid,timeCreated\n".utf8)) == nil)
        #expect(PasswordManagerImport.source(of: Data([0xFF, 0xFE, 0x00])) == nil)
        #expect(PasswordManagerImport.source(of: Data()) == nil)
    }
}

/// `secretctl export --format csv` (``CSVExport``): the browsers' columns, quoting, URLs rebuilt,
/// and what ``CSVImport`` reads back.
@Suite struct CSVExportTests {
    @Test("rows: URLs rebuilt from the attributes, quoting, notes; a binary secret is left out; the import reads it back")
    func rows() throws {
        let network = "org.gnome.keyring.NetworkPassword"
        let items = [
            ExportFile.Item(
                label: "Bank, main", attributes: ["xdg:schema": network, "server": "bank.example", "user": "alice", "protocol": "https", "port": "8443",
                                                  "notes": "call \"first\""],
                secret: Data("p\"w,1\nx".utf8)),
            ExportFile.Item(label: "Router", attributes: ["xdg:schema": network, "server": "fe80::1", "user": "admin"], secret: Data("r".utf8)),
            ExportFile.Item(label: "API", attributes: ["service": "api", "account": "bot"], secret: Data(" spaced ".utf8)),
            ExportFile.Item(label: "Key", attributes: ["service": "k"], secret: Data([0xFF, 0x00])),
        ]
        var (bytes, leftOut) = CSVExport.bytes(of: items)
        defer { bytes.wipe() }
        #expect(leftOut == 1)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == "name,url,username,password,note\r\n"
            + "\"Bank, main\",https://bank.example:8443/,alice,\"p\"\"w,1\nx\",\"call \"\"first\"\"\"\r\n"
            + "Router,https://[fe80::1]/,admin,r,\r\n"
            + "API,,bot,\" spaced \",\r\n")
        let (read, skipped) = try CSVImport.items(text)
        #expect(skipped == 1)  // the row without a URL
        #expect(read.map(\.label) == ["Bank, main", "Router"])
        #expect(read[0].attributes == ["xdg:schema": network, "server": "bank.example", "user": "alice", "protocol": "https", "port": "8443"])
        #expect(read[0].secret == Data("p\"w,1\nx".utf8))
    }
}

/// The XML text of ``KDBXExport`` (the database itself is opened by keepassxc-cli in
/// `SecretCtlEndToEnd.exportKDBX`).
@Suite struct KDBXExportTests {
    @Test("XML text: markup escaped, line ends kept, characters XML 1.0 cannot hold dropped")
    func escaping() {
        #expect(KDBXExport.escaped("a<b>&\"c\" ✓") == "a&lt;b&gt;&amp;&quot;c&quot; ✓")
        #expect(KDBXExport.escaped("two\nlines\r\n\tx") == "two\nlines\r\n\tx")
        #expect(KDBXExport.escaped("bell\u{7}nul\u{0}end\u{FFFE}") == "bellnulend")
    }
}

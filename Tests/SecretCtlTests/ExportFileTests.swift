import Foundation
import KeychainCore
import SecretCrypto
import Testing

@testable import SecretCtl

@Suite struct ExportFileTests {
    let items = [
        ExportFile.Item(label: "Mail ✓", attributes: ["service": "mail", "account": "alice"], secret: Data("s3cr3t".utf8)),
        ExportFile.Item(label: "blob", attributes: ["k": "v"], secret: Data([0, 1, 255])),
    ]

    @Test("an export opens with its passphrase and only with it")
    func roundTrip() throws {
        let sealed = Data(try ExportFile.seal(items, passphrase: Data("pass phrase".utf8), parameters: .testing))
        #expect(ExportFile.isExport(sealed))
        #expect(try ExportFile.open(sealed, passphrase: Data("pass phrase".utf8)) == items)
        #expect(throws: CommandLineError.failure("wrong passphrase, or the file is damaged; nothing was imported", status: .accessDenied)) {
            try ExportFile.open(sealed, passphrase: Data("wrong".utf8))
        }
    }

    @Test("the plaintext is JSON that JSONDecoder reads back exactly: escapes, control characters, non-ASCII, every base64 padding, no items; its length is known before it is written")
    func plaintextJSON() throws {
        let awkward = [
            ExportFile.Item(label: "quote \" backslash \\ slash / tab \t newline \n cr \r nul \u{0} bell \u{7} esc \u{1B} del \u{7F} bs \u{8} ff \u{C}",
                            attributes: ["ключ \u{1F511}": "значение \"é\"", "": "", "line\nbreak": "\u{1F}\u{10}"], secret: Data()),
            ExportFile.Item(label: "", attributes: ["a": "b"], secret: Data([0xFF])),
            ExportFile.Item(label: "two", attributes: [:], secret: Data([0, 0xFE])),
            ExportFile.Item(label: "three", attributes: ["x": "y"], secret: Data([1, 2, 3])),
            ExportFile.Item(label: "many", attributes: ["x": "y"], secret: Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0 * 7) })),
        ]
        for items in [awkward, [], items] {
            let json = ExportFile.json(items)
            #expect(json.count == ExportFile.jsonLength(items))
            #expect(try ExportFile.items(fromJSON: Data(json)) == items)
            // What JSONEncoder wrote before reads back the same.
            struct Payload: Encodable { var items: [ExportFile.Item] }
            #expect(try ExportFile.items(fromJSON: try JSONEncoder().encode(Payload(items: items))) == items)
        }
        #expect(String(decoding: ExportFile.json([ExportFile.Item(label: "a\u{1}", attributes: [:], secret: Data("hi!?".utf8))]), as: UTF8.self)
            == #"{"items":[{"label":"a\u0001","attributes":{},"secret":"aGkhPw=="}]}"#)
    }

    @Test("the payload reader reads what JSONDecoder reads: whitespace, any key order, unknown members, every escape; and refuses what it refuses")
    func payloadReaderAgreesWithJSONDecoder() throws {
        struct Payload: Decodable { var items: [ExportFile.Item] }
        let readable = [
            #"{"items":[]}"#,
            " \n{ \"items\" :\t[ { \"secret\" : \"cHc=\" , \"attributes\" : { \"a\" : \"b\" } , \"label\" : \"L\" } ] }\r\n",
            #"{"version":1,"items":[{"label":"x","attributes":{},"secret":"","extra":{"n":[1,2.5e3,-0,0.5E-2,true,false,null,"s",{}]}}],"more":null}"#,
            #"{"items":[{"label":"a\/b \"q\" \\ \u00e9 \ud83d\ude00 \b\f\n\r\t","attributes":{"k\u0000":"v\u001F"},"secret":"AAEC/w=="}]}"#,
            #"{"items":[{"label":"é ✓ 🔑","attributes":{"ключ":"значение"},"secret":"AA=="},{"label":"","attributes":{"":""},"secret":"AAA="}]}"#,
        ]
        for json in readable {
            let decoded = try JSONDecoder().decode(Payload.self, from: Data(json.utf8)).items
            #expect(try ExportFile.items(fromJSON: Data(json.utf8)) == decoded, "\(json)")
        }
        let refused = [
            "", "[]", "{}", #"{"items":{}}"#, #"{"items":[{}]}"#, #"{"items":[]} x"#, #"{"items":[,]}"#,
            #"{"items":[{"label":"x","attributes":{}}]}"#, #"{"items":[{"label":null,"attributes":{},"secret":""}]}"#,
            #"{"items":[{"label":"x","attributes":{"a":1},"secret":""}]}"#, #"{"items":[{"label":"x","attributes":{},"secret":"!!"}]}"#,
            #"{"items":[{"label":"\ud800","attributes":{},"secret":""}]}"#, #"{"items":[{"label":"\ud800\u0041","attributes":{},"secret":""}]}"#,
            #"{"items":[{"label":"\x","attributes":{},"secret":""}]}"#, #"{"items":[{"label":"\u12g4","attributes":{},"secret":""}]}"#,
            "{\"items\":[{\"label\":\"tab\tinside\",\"attributes\":{},\"secret\":\"\"}]}",
            #"{"items":[],"t":tru}"#, #"{"items":[{"label":"x""#,
        ]
        // Not JSON, though JSONDecoder reads them (no secretctl ever wrote them): refused here.
        let lenient = [#"{"items":[],}"#, #"{"items":[],"n":01}"#, #"{"items":[],"n":1.}"#, #"{"items":[],"n":-}"#]
        for json in refused + lenient {
            if !lenient.contains(json) {
                #expect((try? JSONDecoder().decode(Payload.self, from: Data(json.utf8))) == nil, "JSONDecoder reads \(json)")
            }
            #expect(throws: CommandLineError.failure("the export's contents are damaged; nothing was imported", status: .usage)) {
                try ExportFile.items(fromJSON: Data(json.utf8))
            }
        }
        // A repeated member: the first one, as JSONDecoder takes it.
        let repeated = #"{"items":[{"label":"first","attributes":{"a":"1","a":"2"},"secret":"","label":"second"}]}"#
        #expect(try ExportFile.items(fromJSON: Data(repeated.utf8)) == JSONDecoder().decode(Payload.self, from: Data(repeated.utf8)).items)
        #expect(try ExportFile.items(fromJSON: Data(repeated.utf8)).first?.label == "first")
        // Bytes that are not UTF-8 inside a string.
        let invalid = Data(#"{"items":[{"label":""#.utf8) + Data([0xC3, 0x28]) + Data(#"","attributes":{},"secret":""}]}"#.utf8)
        #expect((try? JSONDecoder().decode(Payload.self, from: invalid)) == nil)
        #expect(throws: CommandLineError.self) { try ExportFile.items(fromJSON: invalid) }
    }

    @Test("a changed header, body or version is refused")
    func tampering() throws {
        let sealed = try ExportFile.seal(items, passphrase: Data("p".utf8), parameters: .testing)
        var salt = sealed
        salt[30] ^= 1
        #expect(throws: CommandLineError.self) { try ExportFile.open(Data(salt), passphrase: Data("p".utf8)) }
        var body = sealed
        body[body.count - 20] ^= 1
        #expect(throws: CommandLineError.self) { try ExportFile.open(Data(body), passphrase: Data("p".utf8)) }
        var version = sealed
        version[16] = 9
        #expect(throws: CommandLineError.failure("export format version 9 is newer than this secretctl reads (1)", status: .usage)) {
            try ExportFile.open(Data(version), passphrase: Data("p".utf8))
        }
    }

    @Test("key parameters beyond the limits are refused before any work (found by fuzzing: 2 GiB from one bit)")
    func hostileKeyParameters() throws {
        let sealed = try ExportFile.seal(items, passphrase: Data("p".utf8), parameters: .testing)
        // iterations at 17, memory KiB at 21, lanes at 25 (big-endian UInt32s).
        for (offset, value) in [(21, UInt32(0x0020_0040)), (21, UInt32(300 * 1024)), (17, UInt32(16)), (25, UInt32(17)), (21, UInt32(7))] {
            var hostile = sealed
            for index in 0..<4 { hostile[offset + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * index)) }
            let started = Date()
            #expect(throws: CommandLineError.self) { try ExportFile.open(Data(hostile), passphrase: Data("p".utf8)) }
            do { _ = try ExportFile.open(Data(hostile), passphrase: Data("p".utf8)) } catch {
                #expect(error.message?.contains("key parameters are out of range") == true, "\(error)")
            }
            #expect(Date().timeIntervalSince(started) < 2)
        }
        #expect(throws: CommandLineError.self) {
            try ExportFile.seal(items, passphrase: Data("p".utf8), parameters: KDFParameters(iterations: 1, memoryKiB: 1 << 20, lanes: 1))
        }
    }

    @Test("CSV: a URL without a host, or with a port outside 1-65535, skips its row (found by fuzzing)")
    func csvBadURLs() throws {
        let text = "url,username,password\nhttps://:80/,u,p\nhttps://[]/,u,p\nhttps://h.example:99999/,u,p\nhttps://h.example:0/,u,p\n"
            + "https://ok.example:8080/,u,p\n"
        let (items, skipped) = try CSVImport.items(text)
        #expect(skipped == 4)
        #expect(items.map { $0.attributes["server"] } == ["ok.example"])
    }

    @Test("CSV: quotes, commas, CRLF; rows become internet passwords")
    func csv() throws {
        let text = "name,url,username,password\r\n\"Bank, main\",https://bank.example:8443/login,alice,\"p\"\"w,1\"\r\nnohost,not a url,bob,x\n"
        let (items, skipped) = try CSVImport.items(text)
        #expect(skipped == 1)
        #expect(items == [ExportFile.Item(
            label: "Bank, main",
            attributes: ["xdg:schema": "org.gnome.keyring.NetworkPassword", "server": "bank.example", "user": "alice",
                         "protocol": "https", "port": "8443"],
            secret: Data("p\"w,1".utf8))])
        #expect(throws: CommandLineError.failure("the CSV file needs url, username and password columns", status: .usage)) {
            try CSVImport.items("a,b\n1,2\n")
        }
    }
}

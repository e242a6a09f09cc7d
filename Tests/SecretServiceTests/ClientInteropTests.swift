import Foundation
import KeychainTestSupport
import SecretCrypto
import Testing

@testable import SecretService

/// Every client reads every other client's items: four independent implementations of the
/// Secret Service client (``InteropClient``: libsecret, jeepney, godbus, Net::DBus), each
/// storing through secretd and each reading what the others stored; and the content types
/// secretd keeps and answers (``SecretContentType``).
@Suite struct ClientInteropTests {
    /// A secret with letters outside ASCII, so that a client that mangles UTF-8 shows.
    static func secret(of writer: InteropClient) -> String { "from \(writer): pässwörd ✓ 鍵" }

    @Test("libsecret, jeepney, godbus and Net::DBus clients each read what every one of them stored, as text")
    func everyClientReadsEveryOther() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let goClient = try InteropClient.buildGoClient(into: fixture.root)

        for writer in InteropClient.allCases {
            let stored = try fixture.run(
                writer.storeCommand(label: "Interop \(writer)", attributes: [("interop", "matrix"), ("writer", "\(writer)")], goClient: goClient),
                input: Self.secret(of: writer))
            #expect(stored.status == 0, "\(writer) could not store: \(stored.errorOutput)")
        }
        for reader in InteropClient.allCases {
            for writer in InteropClient.allCases {
                let found = try fixture.run(reader.lookupCommand(attributes: [("interop", "matrix"), ("writer", "\(writer)")], goClient: goClient))
                #expect(found.status == 0, "\(reader) could not read what \(writer) stored: \(found.errorOutput)")
                // Go's "text/plain; charset=utf8" is answered as text/plain: libsecret reads it as text.
                let expected = Self.secret(of: writer) + (reader.printsContentType ? "\ntext/plain\n" : "")
                #expect(found.text == expected, "\(reader) read what \(writer) stored")
            }
        }
        #expect(daemon.isRunning)
    }

    @Test("text/plain with parameters is answered as text/plain when the secret is UTF-8; other types as stored")
    func answeredContentTypes() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let cases: [(name: String, type: String, secret: [UInt8], answered: String)] = [
            ("utf8", "text/plain; charset=utf8", Array("grüße".utf8), "text/plain"),
            ("spaced", " TEXT/Plain ;charset=UTF-8", Array("x".utf8), "text/plain"),
            ("latin1", "text/plain; charset=iso-8859-1", [0x63, 0x61, 0x66, 0xE9], "text/plain; charset=iso-8859-1"),
            ("binary", "application/octet-stream", [0x00, 0xFF, 0x10], "application/octet-stream"),
            ("html", "text/html; charset=utf-8", Array("<b>".utf8), "text/html; charset=utf-8"),
            ("plainer", "text/plainer; charset=utf-8", Array("x".utf8), "text/plainer; charset=utf-8"),
        ]
        let store = """
            import sys, secretstorage
            c = secretstorage.get_default_collection(secretstorage.dbus_init())
            c.create_item(sys.argv[1], {"case": sys.argv[1]}, sys.stdin.buffer.read(), replace=True, content_type=sys.argv[2])
            """
        let script = fixture.root.appendingPathComponent("store-typed.py")
        try store.write(to: script, atomically: true, encoding: .utf8)
        for entry in cases {
            let stored = try CommandResult.run(
                ["/usr/bin/python3", script.path, entry.name, entry.type], input: Data(entry.secret), environment: fixture.environment,
                scratch: fixture.root)
            #expect(stored.status == 0, "\(stored.errorOutput)")
        }
        let goClient = try InteropClient.buildGoClient(into: fixture.root)
        for entry in cases {
            for reader in [InteropClient.python, .go, .perl] {
                let found = try fixture.run(reader.lookupCommand(attributes: [("case", entry.name)], goClient: goClient))
                #expect(found.status == 0, "\(found.errorOutput)")
                #expect(found.output == Data(entry.secret + Array("\n\(entry.answered)\n".utf8)), "\(reader) reading \(entry.name)")
            }
            // libsecret gives a password only for text/plain (or UTF-8 without a type).
            let lookedUp = try fixture.run(InteropClient.libsecret.lookupCommand(attributes: [("case", entry.name)], goClient: goClient))
            if entry.answered == "text/plain" {
                #expect(lookedUp.output == Data(entry.secret), "secret-tool reading \(entry.name)")
            } else {
                #expect(lookedUp.text.isEmpty, "secret-tool printed a non-text secret as text (\(entry.name))")
            }
        }
        #expect(daemon.isRunning)
    }

    @Test("the answered content type, case by case")
    func answeredRule() {
        func answered(_ type: String, _ bytes: [UInt8]) -> String { SecretContentType.answered(type, for: SecureBytes(bytes)) }
        #expect(answered("text/plain", [0xFF]) == "text/plain")
        #expect(answered("text/plain; charset=utf8", Array("ok".utf8)) == "text/plain")
        #expect(answered("text/plain;charset=\"UTF-8\"", []) == "text/plain")
        #expect(answered("\ttext/plain ; format=flowed", Array("é".utf8)) == "text/plain")
        #expect(answered("text/plain; charset=utf8", [0xC3]) == "text/plain; charset=utf8")  // truncated UTF-8
        #expect(answered("text/plain; charset=utf8", [0xED, 0xA0, 0x80]) == "text/plain; charset=utf8")  // a surrogate
        #expect(answered("text/plainx; a=b", Array("ok".utf8)) == "text/plainx; a=b")
        #expect(answered("text/plain", Array("ok".utf8)) == "text/plain")
        #expect(answered("", Array("ok".utf8)) == "")
        #expect(answered("application/octet-stream", Array("ok".utf8)) == "application/octet-stream")
    }
}

import Foundation
import KeychainCore
@testable import SecretCrypto
@testable import SecretService
import SecretStore
import Testing

/// The SSH agent over a keyring in-process (no socket, no main loop, a clock moved by hand):
/// what it answers as the keyring locks, unlocks and changes, and how a key is stored.
/// SSHAgentTests drive the same agent through its socket with OpenSSH's clients.
@Suite struct SSHAgentKeyringTests {
    /// RFC 8032 §7.1 test 1.
    static let seed: [UInt8] = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    static let publicKey: [UInt8] = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")

    static func hex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16) ?? 0
        }
    }

    /// A keyring with an unlocked login collection (the default alias) and an agent over it.
    final class Fixture {
        let directory: URL
        let keyring: Keyring
        let agent: SSHAgent
        /// The agent's clock, moved by hand.
        final class Clock { var now = Date(timeIntervalSince1970: 1_800_000_000) }
        let clock = Clock()
        var now: Date {
            get { clock.now }
            set { clock.now = newValue }
        }
        let login: Store.CollectionRecord
        let keys: Store.ItemKeys

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("ssh-agent-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let store = try Store(directory: directory)
            keyring = Keyring(store: store)
            (login, keys) = try keyring.createCollection(
                name: "login", label: "Login", key: try NewCollectionKey(password: SecureBytes(Array("pw".utf8)), parameters: .testing))
            try keyring.setAlias("default", to: login)
            let clock = self.clock
            agent = SSHAgent(keyring: keyring, commitBarrier: CommitBarrier(store: store), offLoop: .inline, clock: { clock.now }, pinentry: nil)
        }

        deinit {
            keyring.store.close()
            try? FileManager.default.removeItem(at: directory)
        }

        /// The agent's reply to `message` (its bytes after the length), without the length.
        func send(_ message: [UInt8]) -> [UInt8] {
            var reply: [UInt8]?
            agent.answer(SecureBytes(message), from: SSHAgentSocket.Peer()) { reply = $0 }
            return Array((reply ?? []).dropFirst(4))
        }

        /// Adds the RFC 8032 key, with `constraints` (constraint bytes) if any.
        func add(comment: String = "rfc8032", constraints: [UInt8]? = nil) -> [UInt8] {
            var writer = SSHWriter()
            writer.byte(constraints == nil ? 17 : 25)
            writer.string("ssh-ed25519")
            writer.string(SSHAgentKeyringTests.publicKey)
            writer.string(SSHAgentKeyringTests.seed + SSHAgentKeyringTests.publicKey)
            writer.string(comment)
            return send(writer.bytes + (constraints ?? []))
        }

        /// The comments of the keys listed.
        func listed() -> [String] {
            let reply = send([11])
            return reply.withUnsafeBytes { bytes in
                var reader = SSHReader(bytes)
                guard (try? reader.byte()) == 12, let count = try? reader.uint32() else { return ["not an answer"] }
                return (0..<count).compactMap { _ in
                    _ = try? reader.string()
                    return try? reader.text()
                }
            }
        }

        /// The agent's signature of `data` with the RFC 8032 key (nil: a failure).
        func sign(_ data: [UInt8]) -> [UInt8]? {
            var blob = SSHWriter()
            blob.string("ssh-ed25519")
            blob.string(SSHAgentKeyringTests.publicKey)
            var writer = SSHWriter()
            writer.byte(13)
            writer.string(blob.bytes)
            writer.string(data)
            writer.uint32(0)
            let reply = send(writer.bytes)
            guard reply.first == 14 else { return nil }
            return reply.withUnsafeBytes { bytes in
                var reader = SSHReader(bytes)
                _ = try? reader.byte()
                guard let signature = try? reader.string() else { return nil }
                return signature.withUnsafeBytes { inner in
                    var reader = SSHReader(inner)
                    guard (try? reader.text()) == "ssh-ed25519" else { return nil }
                    return try? reader.string()
                }
            }
        }

        /// The stored SSH key items' attributes.
        func storedAttributes() throws -> [[String: String]] {
            try keyring.store.search([PortalNames.schemaAttribute: SSHAgentNames.schema], in: login).map {
                try keyring.store.readItem($0, in: login, keys: keys).attributes
            }
        }
    }

    @Test("an added key is an item of the login keyring: its schema, access group ssh, device-only, fingerprint and public key")
    func storedItem() throws {
        let fixture = try Fixture()
        #expect(fixture.add() == [6])
        let attributes = try #require(try fixture.storedAttributes().first)
        #expect(attributes[AccessGroupNames.attribute] == "ssh")
        #expect(attributes[ItemAccessibility.attribute] == "when-unlocked-device-only")
        #expect(attributes[SSHAgentNames.typeAttribute] == "ssh-ed25519")
        #expect(attributes[SSHAgentNames.commentAttribute] == "rfc8032")
        #expect(attributes[SSHAgentNames.fingerprintAttribute]?.hasPrefix("SHA256:") == true)
        #expect(attributes[SSHAgentNames.expiresAttribute] == nil)
        let record = try #require(try fixture.keyring.store.search([PortalNames.schemaAttribute: SSHAgentNames.schema]).first)
        #expect(record.accessGroup == "ssh", "the group is kept in the clear, so it holds while the keyring is locked")
        // Added again with another comment: replaced, not doubled.
        #expect(fixture.add(comment: "renamed") == [6])
        #expect(try fixture.storedAttributes().map { $0[SSHAgentNames.commentAttribute] } == ["renamed"])
        #expect(fixture.listed() == ["renamed"])
    }

    @Test("the signature is RFC 8032's, made with the key opened from the keyring")
    func signature() throws {
        let fixture = try Fixture()
        #expect(fixture.sign([]) == nil, "no key yet")
        #expect(fixture.add() == [6])
        #expect(fixture.sign([]) == Self.hex(
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"))
    }

    @Test("a lock empties the list and stops signing and adding; an unlock brings the key back")
    func lockAndUnlock() throws {
        let fixture = try Fixture()
        #expect(fixture.add() == [6])
        fixture.keyring.lock(fixture.login)
        #expect(fixture.listed().isEmpty)
        #expect(fixture.sign([1]) == nil)
        #expect(fixture.add(comment: "while locked") == [5])
        #expect(fixture.send([19]) == [5], "remove-all while locked is a failure, and removes nothing")
        fixture.keyring.unlocked(fixture.login, with: fixture.keys)
        #expect(fixture.listed() == ["rfc8032"])
        #expect(fixture.sign([1]) != nil)
    }

    @Test("a key added with a lifetime is listed until it ends, then gone from the keyring at the next reading")
    func lifetime() throws {
        let fixture = try Fixture()
        #expect(fixture.add(constraints: [1, 0, 0, 0, 60]) == [6])
        #expect(try fixture.storedAttributes().first?[SSHAgentNames.expiresAttribute] == "1800000060")
        fixture.now += 59
        #expect(fixture.listed() == ["rfc8032"])
        fixture.now += 2
        #expect(fixture.listed().isEmpty, "past its lifetime it is not listed")
        #expect(fixture.sign([1]) == nil, "nor used")
        fixture.keyring.lock(fixture.login)
        fixture.keyring.unlocked(fixture.login, with: fixture.keys)
        #expect(try fixture.storedAttributes().isEmpty, "the next reading removed it from the keyring")
    }

    @Test("ssh-add -c without a pinentry, destination constraints, and a private half of another key are refused")
    func refusals() throws {
        let fixture = try Fixture()
        #expect(fixture.add(constraints: [2]) == [5])
        var restriction = SSHWriter()
        restriction.byte(255)
        restriction.string("restrict-destination-v00@openssh.com")
        restriction.string([UInt8]())
        #expect(fixture.add(constraints: restriction.bytes) == [5])
        var writer = SSHWriter()
        writer.byte(17)
        writer.string("ssh-ed25519")
        writer.string(Self.publicKey)
        writer.string(Self.hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb") + Self.publicKey)
        writer.string("mismatched")
        #expect(fixture.send(writer.bytes) == [5], "a seed that does not give the public key")
        #expect(try fixture.storedAttributes().isEmpty)
        #expect(fixture.listed().isEmpty)
    }
}

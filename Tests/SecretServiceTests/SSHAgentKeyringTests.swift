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

    /// The RFC 8032 key's public blob.
    static var blob: [UInt8] {
        var writer = SSHWriter()
        writer.string("ssh-ed25519")
        writer.string(publicKey)
        return writer.bytes
    }

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
        /// The access group policy the agent reads, changed by hand.
        final class Policy { var current = AccessPolicy() }
        let policy = Policy()
        /// The login password the agent's password check accepts.
        static let password = "pw"

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("ssh-agent-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let store = try Store(directory: directory)
            keyring = Keyring(store: store)
            (login, keys) = try keyring.createCollection(
                name: "login", label: "Login", key: try NewCollectionKey(password: SecureBytes(Array("pw".utf8)), parameters: .testing))
            try keyring.setAlias("default", to: login)
            let clock = self.clock
            let policy = self.policy
            agent = SSHAgent(
                keyring: keyring, commitBarrier: CommitBarrier(store: store), offLoop: .inline, clock: { clock.now }, pinentry: nil,
                policy: { policy.current },
                verifyPassword: { password, done in
                    done(password.withBytes { Array($0) } == Array(Self.password.utf8) ? nil : "the password is wrong")
                })
        }

        deinit {
            keyring.store.close()
            try? FileManager.default.removeItem(at: directory)
        }

        /// The agent's reply to `message` (its bytes after the length) from `peer`, without the length.
        func send(_ message: [UInt8], from peer: SSHAgentSocket.Peer = SSHAgentSocket.Peer()) -> [UInt8] {
            var reply: [UInt8]?
            agent.answer(SecureBytes(message), from: peer) { reply = $0 }
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

        /// The comments of the keys listed to `peer`.
        func listed(by peer: SSHAgentSocket.Peer = SSHAgentSocket.Peer()) -> [String] {
            let reply = send([11], from: peer)
            return reply.withUnsafeBytes { bytes in
                var reader = SSHReader(bytes)
                guard (try? reader.byte()) == 12, let count = try? reader.uint32() else { return ["not an answer"] }
                return (0..<count).compactMap { _ in
                    _ = try? reader.string()
                    return try? reader.text()
                }
            }
        }

        /// The agent's signature of `data` with the RFC 8032 key for `peer` (nil: a failure).
        func sign(_ data: [UInt8], by peer: SSHAgentSocket.Peer = SSHAgentSocket.Peer()) -> [UInt8]? {
            var writer = SSHWriter()
            writer.byte(13)
            writer.string(SSHAgentKeyringTests.blob)
            writer.string(data)
            writer.uint32(0)
            let reply = send(writer.bytes, from: peer)
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

        /// secretd's confine extension from `peer`: the agent's reply (success, or the extension
        /// failure and why).
        func confine(_ key: String, to group: String?, password: String = "", from peer: SSHAgentSocket.Peer) -> [UInt8] {
            var writer = SSHWriter()
            writer.byte(SSHAgentNames.Message.extension.rawValue)
            writer.string(SSHAgentNames.Extension.confine)
            writer.string(key)
            writer.string(group ?? "")
            writer.string(password)
            return send(writer.bytes, from: peer)
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

    /// A client of the agent named `exe:PATH`.
    static func peer(_ path: String) -> SSHAgentSocket.Peer {
        SSHAgentSocket.Peer(identity: CallerIdentity(kind: .exe, name: path), pid: 4242)
    }

    @Test("confine: only unconfined programs may; narrowing is free, widening needs the password; members alone list, sign and remove; a key added again stays confined")
    func confinement() throws {
        let fixture = try Fixture()
        let member = Self.peer("/usr/bin/member"), outsider = Self.peer("/usr/bin/outsider"), app = Self.peer("/opt/app")
        fixture.policy.current = try AccessPolicy.parse(
            "[group \"com.example.work\"]\nmember = exe:/usr/bin/member\n[group \"com.example.other\"]\n[app \"exe:/opt/app\"]\ngroups = com.example.other\n",
            file: "access-groups.conf")
        #expect(fixture.add() == [6])
        func refusal(_ reply: [UInt8]) -> String? {
            reply.withUnsafeBytes { bytes in
                var reader = SSHReader(bytes)
                guard (try? reader.byte()) == SSHAgentNames.Message.extensionFailure.rawValue else { return nil }
                return try? reader.text()
            }
        }
        #expect(refusal(fixture.confine("rfc8032", to: "com.example.work", from: app))?.contains("only your own programs") == true)
        #expect(refusal(fixture.confine("rfc8032", to: "com.example.work", from: SSHAgentSocket.Peer())) != nil, "an unidentified client")
        #expect(refusal(fixture.confine("nosuch", to: "com.example.work", from: outsider)) == "the agent has no key nosuch")
        #expect(refusal(fixture.confine("rfc8032", to: "com.example.nosuch", from: outsider))?.contains("defines no group") == true)
        #expect(fixture.confine("rfc8032", to: "com.example.work", from: outsider) == [6], "narrowing needs no password")
        #expect(try fixture.storedAttributes().first?[SSHAgentNames.groupAttribute] == "com.example.work")

        #expect(fixture.listed(by: outsider).isEmpty && fixture.listed().isEmpty)
        // secretd's keys extension lists it, with its group, to the person's own programs only.
        var keys = SSHWriter()
        keys.byte(SSHAgentNames.Message.extension.rawValue)
        keys.string(SSHAgentNames.Extension.keys)
        var all = SSHWriter()
        all.byte(SSHAgentNames.Message.success.rawValue)
        all.uint32(1)
        all.string(Self.blob)
        all.string("rfc8032")
        all.string("com.example.work")
        #expect(fixture.send(keys.bytes, from: outsider) == all.bytes)
        #expect(refusal(fixture.send(keys.bytes, from: app))?.contains("only your own programs") == true)
        #expect(fixture.listed(by: member) == ["rfc8032"])
        #expect(fixture.sign([1], by: outsider) == nil)
        #expect(fixture.sign([1], by: member) != nil)
        #expect(fixture.send([19], from: outsider) == [6], "remove-all removes only what the client sees")
        #expect(fixture.listed(by: member) == ["rfc8032"])
        #expect(fixture.add(comment: "again") == [6])
        #expect(try fixture.storedAttributes().first?[SSHAgentNames.groupAttribute] == "com.example.work", "added again, still confined")

        // Moving or unconfining widens: the password is needed, and must be right.
        #expect(refusal(fixture.confine("again", to: "com.example.other", from: outsider))?.contains("needs the login password") == true)
        #expect(refusal(fixture.confine("again", to: nil, password: "wrong", from: outsider))?.contains("the password is wrong") == true)
        #expect(fixture.confine("again", to: nil, password: Fixture.password, from: outsider) == [6])
        #expect(fixture.listed(by: outsider) == ["again"])
        #expect(try fixture.storedAttributes().first?[SSHAgentNames.groupAttribute] == nil)
    }
}

import Foundation
import SecretService
import SecretCrypto
import SecretStore
import DBusValues

/// The Secret parameters and values of each session algorithm (`plain` and
/// `dh-ietf1024-sha256-aes128-cbc-pkcs7`, the latter under a fixed key), and OpenSession's
/// input (the client's DH public key, or any algorithm name).
///
/// The first byte picks what to run: 0 a plain secret, 1 an encrypted secret, 2 OpenSession
/// with a DH public key, 3 OpenSession with an algorithm name. A secret is then a length byte,
/// the parameters (IV), and the value.
enum SessionTarget {
    /// The fixed AES-128 key of the encrypted session.
    static let key: [UInt8] = Array(1...16)

    /// The target.
    static let target = FuzzTarget(
        name: "session", summary: "secret parameters of each session algorithm; OpenSession input", maximumLength: 1024,
        run: run, generatedSeeds: seeds)

    /// Secrets of both sessions, a real DH public key, and the algorithm names.
    private static func seeds() -> [(name: String, data: Data)] {
        let encrypted = Session(owner: ":1.1", algorithm: .diffieHellman(key: SecureBytes(key)))
        var seeds: [(name: String, data: Data)] = [
            ("plain-secret", Data([0, 0] + Array("s3cr3t".utf8))),
            ("plain-empty", Data([0, 0])),
            ("dh-public-key", Data([2] + Gcrypt.DiffieHellman().publicKey)),
            ("algorithm-plain", Data([3] + Array("plain".utf8))),
            ("algorithm-dh", Data([3] + Array("dh-ietf1024-sha256-aes128-cbc-pkcs7".utf8))),
        ]
        for (name, secret) in [("empty", ""), ("short", "s3cr3t"), ("block", "0123456789abcdef"), ("long", String(repeating: "x", count: 40))] {
            guard case .success(.tuple(let fields)) = encrypted.encode(
                SecureBytes(Array(secret.utf8)), contentType: "text/plain", sessionPath: "/s"),
                case .bytes(let iv) = fields[1], case .bytes(let value) = fields[2]
            else { continue }
            seeds.append(("dh-secret-\(name)", Data([1, UInt8(iv.count)] + iv.array + value.array)))
        }
        return seeds
    }

    private static func run(_ data: Data) {
        var input = FuzzInput(data)
        switch input.byte() % 4 {
        case 0:
            let parameters = input.shortBytes()
            checkDecoding(Session(owner: ":1.1", algorithm: .plain), parameters: parameters, value: input.rest())
        case 1:
            let parameters = input.shortBytes()
            checkDecoding(
                Session(owner: ":1.1", algorithm: .diffieHellman(key: SecureBytes(key))), parameters: parameters,
                value: input.rest())
        case 2:
            let peer = input.rest()
            guard case .success(let (session, output)) = Session.open(
                algorithm: "dh-ietf1024-sha256-aes128-cbc-pkcs7", input: .bytes(DBusBytes(peer)), owner: ":1.1")
            else { return }
            guard case .variant(.bytes(let publicKey)) = output else { fatalError("OpenSession answered \(output)") }
            require((1...128).contains(publicKey.count), "our public key has \(publicKey.count) bytes")
            checkRoundTrip(session, secret: peer)
        default:
            let algorithm = String(decoding: input.rest(), as: UTF8.self)
            let result = Session.open(algorithm: algorithm, input: .string(""), owner: ":1.1")
            if case .success = result {
                require(algorithm == "plain", "OpenSession accepted \(algorithm.debugDescription) without a DH key")
            }
        }
    }

    /// A secret that decodes encodes and decodes to the same bytes again.
    private static func checkDecoding(_ session: Session, parameters: [UInt8], value: [UInt8]) {
        guard case .success(let secret) = session.decode(parameters: DBusBytes(parameters), value: DBusBytes(value)) else { return }
        checkRoundTrip(session, secret: secret.withBytes { Array($0) })
    }

    private static func checkRoundTrip(_ session: Session, secret: [UInt8]) {
        let encoded = session.encode(SecureBytes(secret), contentType: "text/plain", sessionPath: "/s")
        guard case .success(.tuple(let fields)) = encoded, fields.count == 4, case .bytes(let parameters) = fields[1],
            case .bytes(let value) = fields[2]
        else { fatalError("a secret does not encode: \(encoded)") }
        guard case .success(let decoded) = session.decode(parameters: parameters, value: value) else {
            fatalError("an encoded secret does not decode")
        }
        require(decoded.withBytes { Array($0) } == secret, "a secret changed on its way through the session")
    }
}

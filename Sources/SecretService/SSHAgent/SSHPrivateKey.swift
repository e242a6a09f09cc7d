import FoundationEssentials
package import KeychainCore
import SecretCrypto

/// A private key the SSH agent signs with, read from the agent protocol's private key fields
/// (what `ssh-add` sends, and what the keychain keeps: PROTOCOL.agent's key type and its
/// fields, without the comment). Its secret parts stay in secure memory and are wiped when it
/// is released.
package struct SSHPrivateKey: Sendable {
    /// The secret parts, by kind.
    enum Material: Sendable {
        /// The 32-byte seed and the public key.
        case ed25519(seed: SecureBytes, publicKey: [UInt8])
        /// The curve, the public point and the private scalar (an mpint's bytes).
        case ecdsa(Gcrypt.Curve, point: [UInt8], scalar: SecureBytes)
        /// The RSA key.
        case rsa(Gcrypt.RSAPrivateKey)
    }

    /// Why a key cannot be read or cannot sign; none carries key material.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// The fields are malformed (named).
        case malformed(String)
        /// A key type this agent does not keep (certificates, security keys, DSA).
        case unsupported(String)
        /// The private part does not match the public one, or a signature failed.
        case inconsistent(String)
        /// The client asked for a SHA-1 `ssh-rsa` signature, which this agent does not make.
        case sha1Refused

        package var description: String {
            switch self {
            case .malformed(let what): "a malformed key: \(what)"
            case .unsupported(let type): "keys of type \(SSHAgentRequest.printable(type)) are not supported"
            case .inconsistent(let what): "an inconsistent key: \(what)"
            case .sha1Refused: "an ssh-rsa (SHA-1) signature was asked for; only rsa-sha2-256 and rsa-sha2-512 are made"
            }
        }
    }

    /// The key type, as its signatures name it (`ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`;
    /// for a certificate, its key's).
    let type: String
    /// The secret parts.
    let material: Material
    /// The plain public key's blob (RFC 4253 §6.6), what `ssh-keygen -l` fingerprints.
    package let plainBlob: [UInt8]
    /// The OpenSSH certificate added with the key, if any (PROTOCOL.certkeys).
    package let certificate: [UInt8]?

    /// What clients name the key by: its certificate, or its public key.
    package var publicBlob: [UInt8] { certificate ?? plainBlob }
    /// The type name clients see (a certificate's, with its suffix).
    package var typeName: String { certificate == nil ? type : type + SSHPublicKey.certificateSuffix }

    /// The smallest and largest RSA moduli accepted, in bits (OpenSSH's limits).
    static let rsaBits = 1024...16384

    /// The curves by their SSH names.
    static let curves: [String: Gcrypt.Curve] = ["nistp256": .p256, "nistp384": .p384, "nistp521": .p521]

    /// Reads a key type and its private fields from `reader` (a comment may follow).
    package static func read(_ reader: inout SSHReader) throws(Failure) -> SSHPrivateKey {
        do {
            let name = try reader.text()
            guard name.hasSuffix(SSHPublicKey.certificateSuffix) else {
                var none: SSHReader?
                return try readFields(name, &reader, certificateFields: &none, certificate: nil)
            }
            // A certificate: its blob, then the private fields of its key without the public
            // ones, which are in the certificate (OpenSSH's sshkey_private_serialize).
            let certificate = try reader.string()
            guard SSHPublicKey.typeName(of: certificate) == name, let plain = SSHPublicKey.plainBlob(certificate) else {
                throw Failure.malformed("the certificate is not one of its key type")
            }
            let type = String(name.dropLast(SSHPublicKey.certificateSuffix.count))
            return try plain.withUnsafeBytes { (bytes) throws -> SSHPrivateKey in
                var fields: SSHReader? = SSHReader(bytes)
                _ = try fields?.text()
                return try readFields(type, &reader, certificateFields: &fields, certificate: certificate)
            }
        } catch let failure as Failure {
            throw failure
        } catch let failure as SSHReader.Failure {
            throw .malformed(failure == .truncated ? "the fields end early" : "\(failure)")
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// Reads a key of `type` from `privateFields`; with `certificateFields` (the certificate's
    /// public fields), its public fields from there instead, which the message then leaves out.
    private static func readFields(
        _ type: String, _ privateFields: inout SSHReader, certificateFields: inout SSHReader?, certificate: [UInt8]?
    ) throws -> SSHPrivateKey {
        let certified = certificate != nil
        /// Reads one public field from the certificate, or else from the message.
        func publicField<T>(_ read: (inout SSHReader) throws -> T) throws -> T {
            guard var fields = certificateFields else { return try read(&privateFields) }
            defer { certificateFields = fields }
            return try read(&fields)
        }
        switch type {
        case "ssh-ed25519":
            let publicKey = try publicField { try $0.string() }
            if certified {
                guard try privateFields.string() == publicKey else { throw Failure.inconsistent("the certificate is for another key") }
            }
            let secret = try privateFields.stringBytes()
            guard publicKey.count == 32, secret.count == 64 else { throw Failure.malformed("Ed25519 fields have the wrong sizes") }
            guard Array(secret[32..<64]) == publicKey else { throw Failure.inconsistent("the Ed25519 public halves differ") }
            var writer = SSHWriter()
            writer.string(type)
            writer.string(publicKey)
            let seed = SecureBytes(copying: UnsafeRawBufferPointer(rebasing: secret[0..<32]))
            return SSHPrivateKey(
                type: type, material: .ed25519(seed: seed, publicKey: publicKey), plainBlob: writer.bytes, certificate: certificate)
        case _ where type.hasPrefix("ecdsa-sha2-"):
            let curveName = try publicField { try $0.text() }
            guard let curve = curves[curveName], type == "ecdsa-sha2-" + curveName else { throw Failure.unsupported(type) }
            let point = try publicField { try $0.string() }
            let scalar = try privateFields.positiveMpint()
            guard point.count == 1 + 2 * curve.fieldLength, point.first == 4 else {
                throw Failure.malformed("the public point is not an uncompressed point of \(curveName)")
            }
            guard !scalar.isEmpty, scalar.count <= curve.fieldLength + 1 else { throw Failure.malformed("the private scalar's size") }
            var writer = SSHWriter()
            writer.string(type)
            writer.string(curveName)
            writer.string(point)
            return SSHPrivateKey(
                type: type, material: .ecdsa(curve, point: point, scalar: SecureBytes(copying: scalar)), plainBlob: writer.bytes,
                certificate: certificate)
        case "ssh-rsa":
            // A plain key sends n before e; a certificate holds e, then n.
            let n, e: [UInt8]
            if certified {
                e = try publicField { Array(try $0.positiveMpint()) }
                n = try publicField { Array(try $0.positiveMpint()) }
            } else {
                n = try publicField { Array(try $0.positiveMpint()) }
                e = try publicField { Array(try $0.positiveMpint()) }
            }
            let d = SecureBytes(copying: try privateFields.positiveMpint())
            let iqmp = SecureBytes(copying: try privateFields.positiveMpint())
            let p = SecureBytes(copying: try privateFields.positiveMpint())
            let q = SecureBytes(copying: try privateFields.positiveMpint())
            guard rsaBits.contains(bitLength(n)) else { throw Failure.unsupported("ssh-rsa of \(bitLength(n)) bits") }
            guard !e.isEmpty, e.count <= 8, d.count > 0, p.count > 0, q.count > 0, iqmp.count > 0 else {
                throw Failure.malformed("an RSA number is missing or out of range")
            }
            var writer = SSHWriter()
            writer.string(type)
            writer.mpint(e)
            writer.mpint(n)
            return SSHPrivateKey(
                type: type, material: .rsa(Gcrypt.RSAPrivateKey(n: n, e: e, d: d, p: p, q: q, iqmp: iqmp)), plainBlob: writer.bytes,
                certificate: certificate)
        default:
            throw Failure.unsupported(type)
        }
    }

    /// The number of bits of the unsigned big-endian `bytes`.
    static func bitLength(_ bytes: [UInt8]) -> Int {
        let digits = bytes.drop { $0 == 0 }
        guard let first = digits.first else { return 0 }
        return (digits.count - 1) * 8 + (8 - first.leadingZeroBitCount)
    }

    /// The key's SHA-256 fingerprint, as `ssh-keygen -l` shows it (`SHA256:` and unpadded base64).
    static func fingerprint(of blob: [UInt8]) -> String {
        let encoded = Data(Gcrypt.hash(blob, with: .sha256)).base64EncodedString()
        return "SHA256:" + encoded.prefix { $0 != "=" }
    }

    /// The signature blob (RFC 4253 §6.6: its algorithm name and the signature) of `data`. For
    /// RSA, `flags` choose `rsa-sha2-512` (0x04) or `rsa-sha2-256` (0x02); without either the
    /// client asks for SHA-1 `ssh-rsa`, which is refused.
    package func sign(_ data: [UInt8], flags: UInt32) throws(Failure) -> [UInt8] {
        var writer = SSHWriter()
        do {
            switch material {
            case .ed25519(let seed, let publicKey):
                let signature = try Gcrypt.ed25519Sign(seed: seed, publicKey: publicKey, message: data)
                writer.string(type)
                writer.string(signature)
            case .ecdsa(let curve, let point, let scalar):
                let (r, s) = try Gcrypt.ecdsaSign(curve: curve, privateKey: scalar, publicPoint: point, message: data)
                var inner = SSHWriter()
                inner.mpint(r)
                inner.mpint(s)
                writer.string(type)
                writer.string(inner.bytes)
            case .rsa(let key):
                let (name, digest): (String, Gcrypt.Digest)
                if flags & SSHAgentNames.rsaSHA512Flag != 0 {
                    (name, digest) = ("rsa-sha2-512", .sha512)
                } else if flags & SSHAgentNames.rsaSHA256Flag != 0 {
                    (name, digest) = ("rsa-sha2-256", .sha256)
                } else {
                    throw Failure.sha1Refused
                }
                let signature = try Gcrypt.rsaSign(key: key, digest: digest, message: data)
                writer.string(name)
                writer.string(signature)
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .inconsistent("cannot sign: \(error)")
        }
        return writer.bytes
    }

    /// Checks that the private part belongs to the public one: a signature of a fixed text
    /// made with it must verify with the public key alone.
    package func checkConsistency() throws(Failure) {
        let probe = Array("secretd ssh-agent key check".utf8)
        let valid: Bool
        switch material {
        case .ed25519(_, let publicKey):
            let blob = try sign(probe, flags: 0)
            valid = Gcrypt.ed25519Verify(publicKey: publicKey, message: probe, signature: Array(blob.suffix(64)))
        case .ecdsa(let curve, let point, let scalar):
            let (r, s): ([UInt8], [UInt8])
            do {
                (r, s) = try Gcrypt.ecdsaSign(curve: curve, privateKey: scalar, publicPoint: point, message: probe)
            } catch {
                throw .inconsistent("cannot sign: \(error)")
            }
            valid = Gcrypt.ecdsaVerify(curve: curve, publicPoint: point, message: probe, r: r, s: s)
        case .rsa(let key):
            let signature: [UInt8]
            do {
                signature = try Gcrypt.rsaSign(key: key, digest: .sha256, message: probe)
            } catch {
                throw .inconsistent("cannot sign: \(error)")
            }
            valid = Gcrypt.rsaVerify(n: key.n, e: key.e, digest: .sha256, message: probe, signature: signature)
        }
        guard valid else { throw .inconsistent("the private part does not match the public key") }
    }
}

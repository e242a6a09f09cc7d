/// Public key blobs of the SSH agent (RFC 4253 §6.6) and OpenSSH certificates
/// (PROTOCOL.certkeys), for what both the agent and `secretctl ssh` need of them.
package enum SSHPublicKey {
    /// What a certificate's type name ends with.
    package static let certificateSuffix = "-cert-v01@openssh.com"

    /// The strings of each plain key type's public fields, after its name.
    private static func publicFieldCount(_ type: String) -> Int? {
        switch type {
        case "ssh-ed25519": 1
        case "ssh-rsa": 2
        case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521": 2
        default: nil
        }
    }

    /// The blob's type name (its first string).
    package static func typeName(of blob: [UInt8]) -> String? {
        blob.withUnsafeBytes { bytes in
            var reader = SSHReader(bytes)
            return try? reader.text()
        }
    }

    /// The plain key's blob: `blob` itself for a plain key; for a certificate, its key type
    /// without the suffix and the public fields that follow the nonce (the key `ssh-keygen -l`
    /// fingerprints). Nil for a malformed blob or an unknown type.
    package static func plainBlob(_ blob: [UInt8]) -> [UInt8]? {
        blob.withUnsafeBytes { bytes -> [UInt8]? in
            var reader = SSHReader(bytes)
            guard let name = try? reader.text() else { return nil }
            guard name.hasSuffix(certificateSuffix) else { return publicFieldCount(name) == nil ? nil : blob }
            let type = String(name.dropLast(certificateSuffix.count))
            guard let count = publicFieldCount(type), (try? reader.stringBytes()) != nil else { return nil }
            var writer = SSHWriter()
            writer.string(type)
            for _ in 0..<count {
                guard let field = try? reader.stringBytes() else { return nil }
                writer.string(field)
            }
            return writer.bytes
        }
    }
}

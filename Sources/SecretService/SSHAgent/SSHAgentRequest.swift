package import KeychainCore
package import SecretCrypto

/// One SSH agent message as ``SSHAgent`` answers it, read from its bytes after the length
/// (RFC 9987 §3; OpenSSH's PROTOCOL.agent): every field within the message's bounds, nothing
/// left over. Messages the agent does not serve parse to ``refused(_:)``.
package enum SSHAgentRequest {
    /// The private key fields of an added key (key type and fields, no comment), in secure memory.
    package struct AddedKey {
        /// The fields, as ``SSHPrivateKey/read(_:)`` reads them.
        package var fields: SecureBytes
    }

    /// What `ssh-add -t` and `-c` ask of an added key.
    package struct Constraints {
        /// Seconds until the key leaves the agent and the keychain; nil: never.
        package var lifetime: UInt32?
        /// Whether the person is asked before each signature.
        package var confirm = false
    }

    /// List the keys (`ssh-add -l`, `-L`; every client before it signs).
    case listKeys
    /// Sign `data` with the key whose public blob is `blob`; `flags` choose RSA's hash.
    case sign(blob: [UInt8], data: [UInt8], flags: UInt32)
    /// Keep a key (`ssh-add`).
    case add(AddedKey, comment: String, constraints: Constraints)
    /// Remove the key whose public blob is `blob` (`ssh-add -d`).
    case remove(blob: [UInt8])
    /// Remove every key (`ssh-add -D`).
    case removeAll
    /// Confine the key named `key` (fingerprint or comment) to access group `group`, or
    /// unconfine it (nil); `password` is the login password, which unconfining or moving a
    /// confined key needs (`secretctl ssh confine`, secretd's own extension).
    case confine(key: String, group: String?, password: SecureBytes?)
    /// List every key with its group, confined or not (`secretctl ssh list`, secretd's own
    /// extension).
    case listAll
    /// A message the agent understands and refuses, or does not know (why, for the log).
    case refused(String)

    /// The longest comment kept, in bytes.
    package static let maximumCommentLength = 4096

    /// Reads `bytes` (a message after its length); `SSHReader.Failure` for anything malformed.
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(SSHReader.Failure) -> SSHAgentRequest {
        var reader = SSHReader(bytes)
        let type = try reader.byte()
        let request: SSHAgentRequest
        switch SSHAgentNames.Message(rawValue: type) {
        case .requestIdentities:
            request = .listKeys
        case .signRequest:
            let blob = try reader.string()
            let data = try reader.string()
            let flags = try reader.uint32()
            request = .sign(blob: blob, data: data, flags: flags)
        case .addIdentity, .addIdentityConstrained:
            request = try parseAdd(&reader, constrained: type == SSHAgentNames.Message.addIdentityConstrained.rawValue)
            // Refused at a constraint it does not take: the rest is not read.
            if case .refused = request { return request }
        case .removeIdentity:
            request = .remove(blob: try reader.string())
        case .removeAllIdentities:
            request = .removeAll
        case .extension:
            let name = try reader.text()
            switch name {
            case SSHAgentNames.Extension.confine:
                let key = try reader.text()
                let group = try reader.text()
                let password = try reader.stringBytes()
                request = .confine(
                    key: key, group: group.isEmpty ? nil : group, password: password.isEmpty ? nil : SecureBytes(copying: password))
            case SSHAgentNames.Extension.keys:
                request = .listAll
            case SSHAgentNames.Extension.sessionBind:
                return .refused(
                    "\(name) is not supported: secretd's agent does not enforce destination constraints (ssh-add -h); "
                        + "ssh carries on without the binding")
            default:
                return .refused("the extension \(printable(name)) is not supported")
            }
        default:
            return .refused("message type \(type) is not supported")
        }
        guard reader.isAtEnd else { throw .malformed("bytes after the message") }
        return request
    }

    /// A name a client sent, fit for a log line: at most 64 characters, only printable ASCII.
    package static func printable(_ name: String) -> String {
        String(name.unicodeScalars.prefix(64).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" })
    }

    /// The key fields (copied into secure memory), the comment and the constraints.
    private static func parseAdd(_ reader: inout SSHReader, constrained: Bool) throws(SSHReader.Failure) -> SSHAgentRequest {
        let start = reader.offset
        // The fields' shape is checked when the key is read; here only where they end: the key
        // type, then the type's number of strings.
        let type = try reader.text()
        let fieldCount: Int
        switch type {
        case "ssh-ed25519": fieldCount = 2
        case "ssh-rsa": fieldCount = 6
        case _ where type.hasPrefix("ecdsa-sha2-") && !type.hasSuffix(SSHPublicKey.certificateSuffix): fieldCount = 3
        // A certificate, then its key's fields without those the certificate holds.
        case "ssh-ed25519" + SSHPublicKey.certificateSuffix: fieldCount = 3
        case "ssh-rsa" + SSHPublicKey.certificateSuffix: fieldCount = 5
        case _ where type.hasPrefix("ecdsa-sha2-"): fieldCount = 2
        default: return .refused("keys of type \(printable(type)) are not supported")
        }
        for _ in 0..<fieldCount { _ = try reader.stringBytes() }
        let fields = SecureBytes(copying: reader.bytes(from: start))
        let comment = try reader.text()
        guard comment.utf8.count <= maximumCommentLength else { throw .malformed("the comment is too long") }
        var constraints = Constraints()
        if constrained {
            while !reader.isAtEnd {
                let constraint = try reader.byte()
                switch SSHAgentNames.Constraint(rawValue: constraint) {
                case .lifetime:
                    constraints.lifetime = try reader.uint32()
                case .confirm:
                    constraints.confirm = true
                case .extension:
                    let name = try reader.text()
                    guard name != SSHAgentNames.Extension.restrictDestination else {
                        return .refused(
                            "a key restricted to destinations (ssh-add -h) was not added: secretd's agent does not enforce "
                                + "destination constraints, and keeping the key without them would drop the restriction you asked for; "
                                + "add it without -h (and forward the agent only to hosts you trust), or keep it in OpenSSH's own ssh-agent")
                    }
                    return .refused("the key constraint \(printable(name)) is not supported")
                case nil:
                    return .refused("key constraint \(constraint) is not supported")
                }
            }
        }
        return .add(AddedKey(fields: fields), comment: comment, constraints: constraints)
    }
}

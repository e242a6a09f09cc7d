import Foundation
import KeychainCore
import SecretCrypto
import SecretService

/// The SSH agent's messages (what any process of the user may send secretd's agent socket):
/// a message parses or is refused, never traps; secretd's confine extension takes an empty
/// group as "unconfine" and an empty password as none; an added key's fields are read as a
/// private key or refused; a key read from them has a public blob that starts with its type, and a
/// signature request it serves gives a blob naming an algorithm of that key.
enum SSHAgentTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "ssh-agent", summary: "SSH agent messages (any client of the agent socket)", maximumLength: 8192, run: run)

    private static func run(_ data: Data) {
        let bytes = [UInt8](data)
        let parsed = bytes.withUnsafeBytes { buffer in
            Result { () throws(SSHReader.Failure) in try SSHAgentRequest.parse(buffer) }
        }
        if case .success(.confine(_, let group, let password)) = parsed {
            require(group?.isEmpty != true && password?.count != 0, "an empty group or password was taken for one")
        }
        guard case .success(.add(let key, let comment, _)) = parsed else { return }
        require(comment.utf8.count <= SSHAgentRequest.maximumCommentLength, "a comment over the limit was taken")
        let read = key.fields.withBytes { buffer in
            Result { () throws(SSHPrivateKey.Failure) in
                var reader = SSHReader(buffer)
                return try SSHPrivateKey.read(&reader)
            }
        }
        guard case .success(let privateKey) = read else { return }
        require(SSHPublicKey.typeName(of: privateKey.publicBlob) == privateKey.typeName, "a key's public blob does not start with its type")
        require(SSHPublicKey.plainBlob(privateKey.publicBlob) == privateKey.plainBlob, "a certificate's key is not the key")
        let type = SSHPublicKey.typeName(of: privateKey.plainBlob)
        // Random fields rarely make a consistent key; when they pass the check, they must sign.
        guard (try? privateKey.checkConsistency()) != nil else { return }
        for flags: UInt32 in [0, 2, 4] {
            guard let signature = try? privateKey.sign(Array("fuzz".utf8), flags: flags) else { continue }
            let algorithm = signature.withUnsafeBytes { buffer in
                var reader = SSHReader(buffer)
                return try? reader.text()
            }
            require(algorithm == type || (type == "ssh-rsa" && algorithm?.hasPrefix("rsa-sha2-") == true), "a signature names another algorithm")
        }
    }
}

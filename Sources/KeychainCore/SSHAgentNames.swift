// The SSH agent's names, for every part that spells them: secretd (the socket it binds, the
// messages it answers, how it stores a key), secretctl (`ssh-agent env`, `ssh list`) and the
// tests. The protocol is RFC 9987 as OpenSSH implements it (authfd.h, PROTOCOL.agent).

/// Where secretd's SSH agent listens, the agent protocol's numbers, and how a key is stored.
package enum SSHAgentNames {
    /// The socket's name in secretd's directory of `$XDG_RUNTIME_DIR` (`secretd`, beside the
    /// login control socket).
    package static let socketName = "ssh-agent"
    /// The directory of `$XDG_RUNTIME_DIR` secretd's sockets are in.
    package static let directoryName = "secretd"

    /// The socket's path for `runtimeDirectory` (`$XDG_RUNTIME_DIR`).
    package static func socketPath(runtimeDirectory: String) -> String {
        runtimeDirectory + "/" + directoryName + "/" + socketName
    }

    /// The longest message either side sends, without its length (OpenSSH's AGENT_MAX_LEN).
    package static let maximumMessageLength = 256 * 1024

    /// The message numbers (RFC 9987 §6.1; OpenSSH's authfd.h).
    package enum Message: UInt8, Sendable {
        /// Something failed or is not supported.
        case failure = 5
        /// Done.
        case success = 6
        /// List the keys.
        case requestIdentities = 11
        /// The keys: a count, then each key's public blob and comment.
        case identitiesAnswer = 12
        /// Sign data with a key: its blob, the data, flags.
        case signRequest = 13
        /// The signature.
        case signResponse = 14
        /// Add a key: its private part and comment.
        case addIdentity = 17
        /// Remove a key, by its blob.
        case removeIdentity = 18
        /// Remove every key.
        case removeAllIdentities = 19
        /// Add a key with constraints (lifetime, confirmation, extensions).
        case addIdentityConstrained = 25
        /// A protocol extension, by name.
        case `extension` = 27
        /// The agent knows the extension and refused the request (secretd's: then a string, why).
        case extensionFailure = 28
    }

    /// The key constraints of `addIdentityConstrained`.
    package enum Constraint: UInt8, Sendable {
        /// A lifetime in seconds (u32).
        case lifetime = 1
        /// Ask before each use.
        case confirm = 2
        /// A named extension constraint.
        case `extension` = 255
    }

    /// The extensions (RFC 9987 §4.7) secretd's agent knows by name.
    package enum Extension {
        /// OpenSSH's binding of an agent connection to a host's session (`ssh` sends it before
        /// it signs; refused: secretd does not enforce destination constraints).
        package static let sessionBind = "session-bind@openssh.com"
        /// OpenSSH's key constraint that restricts a key to destinations (`ssh-add -h`; refused).
        package static let restrictDestination = "restrict-destination-v00@openssh.com"
        /// secretd's own: confine a key to an access group, or unconfine it (`secretctl ssh
        /// confine`). Its body: string key (fingerprint or comment), string group (empty:
        /// unconfine), string login password (empty: none; needed to unconfine or move a key).
        package static let confine = "confine@secretd.github.io"
        /// secretd's own: every key with its access group, confined or not (`secretctl ssh
        /// list`). The reply: success, a uint32 count, then each key's string blob, string
        /// comment and string group (empty: unconfined).
        package static let keys = "keys@secretd.github.io"
    }

    /// The sign request flags that ask an RSA key for `rsa-sha2-256` and `rsa-sha2-512`.
    package static let rsaSHA256Flag: UInt32 = 0x02
    package static let rsaSHA512Flag: UInt32 = 0x04

    /// The schema (`xdg:schema`) of a key kept in the login keyring.
    package static let schema = "io.github.secretd.SSHKey"
    /// The access group keys are kept in: no client belongs to it unless access-groups.conf
    /// names it as a member, so Secret Service clients do not see the private keys.
    package static let accessGroup = "ssh"
    /// The attribute with the key's SHA-256 fingerprint (`SHA256:` and unpadded base64).
    package static let fingerprintAttribute = "ssh:fingerprint"
    /// The attribute with the key's type (`ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`, …).
    package static let typeAttribute = "ssh:type"
    /// The attribute with the key's public blob, base64 (as in an authorized_keys line).
    package static let publicKeyAttribute = "ssh:public-key"
    /// The attribute with the key's comment.
    package static let commentAttribute = "ssh:comment"
    /// The attribute with when the key leaves the agent and the keychain (seconds since 1970),
    /// when it was added with a lifetime (`ssh-add -t`).
    package static let expiresAttribute = "ssh:expires"
    /// The attribute that is `yes` for a key that asks before each use (`ssh-add -c`).
    package static let confirmAttribute = "ssh:confirm"
    /// The attribute with the access group a key is confined to (`secretctl ssh confine`): only
    /// that group's members see it and sign with it. No attribute: every client of the agent.
    package static let groupAttribute = "ssh:group"
    /// The content type of a stored key: the agent protocol's private key fields.
    package static let contentType = "application/x-ssh-agent-key"
}

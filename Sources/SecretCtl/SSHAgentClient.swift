import FoundationEssentials
import Glibc
import KeychainCore
import SecretCrypto

/// A client of secretd's SSH agent socket for `secretctl ssh`: removes keys with the agent
/// protocol (RFC 9987), as `ssh-add` does, and lists and confines them with secretd's own
/// extensions, without needing `ssh-add` or `SSH_AUTH_SOCK`.
struct SSHAgentClient {
    /// A key the agent lists.
    struct Key {
        /// Its public key blob.
        var blob: [UInt8]
        /// Its comment.
        var comment: String
        /// The access group it is confined to; nil: none.
        var group: String?

        /// Its type, the blob's first string (`ssh-ed25519`, …).
        var type: String {
            blob.withUnsafeBytes { bytes in
                var reader = SSHReader(bytes)
                return (try? reader.text()) ?? "unknown"
            }
        }

        /// Its SHA-256 fingerprint, as `ssh-add -l` shows it (a certificate's is its key's).
        var fingerprint: String {
            "SHA256:" + Data(Gcrypt.sha256(SSHPublicKey.plainBlob(blob) ?? blob)).base64EncodedString().prefix { $0 != "=" }
        }

        /// Its `authorized_keys` line: type, base64 blob, comment.
        var publicLine: String {
            "\(type) \(Data(blob).base64EncodedString())" + (comment.isEmpty ? "" : " \(comment)")
        }
    }

    /// The socket secretd's agent listens on: `$XDG_RUNTIME_DIR/secretd/ssh-agent`
    /// (`/run/user/UID` when the variable is not set).
    static var socketPath: String {
        let runtime = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil }
        return SSHAgentNames.socketPath(runtimeDirectory: runtime ?? "/run/user/\(getuid())")
    }

    private let fd: Int32

    /// Connects to the agent; `noProvider` (exit 5) when nothing listens.
    init() throws(CommandLineError) {
        let path = Self.socketPath
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .failure("cannot make a socket: \(String(cString: strerror(errno)))", status: .failed) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            Glibc.close(fd)
            throw .failure("the agent socket's path \(path) is too long", status: .failed)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw .failure("secretd's SSH agent does not answer on \(path) (is secretd running?)", status: .noProvider)
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
    }

    /// Closes the connection.
    func close() { Glibc.close(fd) }

    /// Every key the agent keeps, with the group of each confined one (none while the login
    /// keyring is locked), through secretd's ``SSHAgentNames/Extension/keys``.
    func keys() throws(CommandLineError) -> [Key] {
        let reply = try exchange(SSHWriter.message(.extension) { $0.string(SSHAgentNames.Extension.keys) })
        let parsed: [Key]? = reply.withUnsafeBytes { bytes in
            var reader = SSHReader(bytes)
            do throws(SSHReader.Failure) {
                guard try reader.byte() == SSHAgentNames.Message.success.rawValue else { return nil }
                let count = try reader.uint32()
                guard count <= 100_000 else { return nil }
                var keys: [Key] = []
                for _ in 0..<count {
                    let blob = try reader.string(), comment = try reader.text(), group = try reader.text()
                    keys.append(Key(blob: blob, comment: comment, group: group.isEmpty ? nil : group))
                }
                return keys
            } catch {
                return nil
            }
        }
        guard let parsed else {
            let reason = Self.refusal(in: reply).map { ": \($0)" } ?? " (is it secretd's?)"
            throw .failure("the agent refused to list its keys\(reason)", status: .accessDenied)
        }
        return parsed
    }

    /// Removes `key` from the agent (and so from the keychain); false when the agent refused.
    func remove(_ key: Key) throws(CommandLineError) -> Bool {
        let reply = try exchange(SSHWriter.message(.removeIdentity) { $0.string(key.blob) })
        return reply.first == SSHAgentNames.Message.success.rawValue
    }

    /// Confines the key `name` names (fingerprint or comment) to access group `group`, or
    /// unconfines it (nil), with the login `password` when one was given (secretd's
    /// ``SSHAgentNames/Extension/confine``). Returns nil when done, else the agent's reason.
    func confine(_ name: String, to group: String?, password: [UInt8]?) throws(CommandLineError) -> String? {
        // Built in one buffer of its final size, so the password is in no other copy, and wiped.
        let strings = [Array(SSHAgentNames.Extension.confine.utf8), Array(name.utf8), Array((group ?? "").utf8)]
        let length = 1 + strings.reduce(0) { $0 + 4 + $1.count } + 4 + (password?.count ?? 0)
        var message: [UInt8] = []
        message.reserveCapacity(4 + length)
        func append(_ value: Int) { message += (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        append(length)
        message.append(SSHAgentNames.Message.extension.rawValue)
        for string in strings {
            append(string.count)
            message += string
        }
        append(password?.count ?? 0)
        message += password ?? []
        defer { message.wipe() }
        let reply = try exchange(message)
        if reply.first == SSHAgentNames.Message.success.rawValue { return nil }
        return Self.refusal(in: reply) ?? "the agent refused (is it secretd's?)"
    }

    /// Why secretd's agent refused one of its own extensions (the string after the extension
    /// failure); nil for any other reply.
    private static func refusal(in reply: [UInt8]) -> String? {
        reply.withUnsafeBytes { bytes in
            var reader = SSHReader(bytes)
            guard (try? reader.byte()) == SSHAgentNames.Message.extensionFailure.rawValue else { return nil }
            return try? reader.text()
        }
    }

    /// Sends `message` and reads the reply (its bytes after the length).
    private func exchange(_ message: [UInt8]) throws(CommandLineError) -> [UInt8] {
        let failure = CommandLineError.failure("the conversation with the SSH agent broke off", status: .failed)
        var sent = 0
        while sent < message.count {
            let wrote = message.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard wrote > 0 else { throw failure }
            sent += wrote
        }
        let header = try read(count: 4)
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length > 0, length <= SSHAgentNames.maximumMessageLength else { throw failure }
        return try read(count: length)
    }

    private func read(count: Int) throws(CommandLineError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, count - filled) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw .failure("the conversation with the SSH agent broke off", status: .failed) }
            filled += got
        }
        return bytes
    }
}

internal import CLoginControl
internal import CProcess
import FoundationEssentials
import Glibc
import SecretCrypto

/// The Unix socket pam_secretd.so hands the login password to (protocol and path:
/// Sources/CLoginControl/login-control.h). systemd's `secretd.socket` listens on it and passes it
/// to secretd (`LISTEN_FDS`); without it, secretd listens on `$XDG_RUNTIME_DIR/secretd/control`
/// itself. Only connections from secretd's own uid are answered; each carries one request,
/// gets one reply and is closed, and one that has not sent its request within the protocol's
/// timeout is closed without a reply. Runs on the main loop. With SSHAgentSocket and
/// SystemdSockets, the only file with socket calls.
///
/// Who sent a request: the kernel attaches the real uid of the sending process to each byte
/// (SO_PASSCRED). A request whose every byte came from real uid 0 is root's PAM stack (the
/// module's helper keeps its real uid 0 until it has sent, pam_secretd(8)), the
/// ``PasswordChecks/Origin/rootLogin``; any other is a process of the user.
final class LoginControlSocket {
    /// What the socket does with a request, sent by `origin`; calls `reply` once, now or later.
    typealias Handler = (LoginControlRequest, PasswordChecks.Origin, _ reply: @escaping (LoginControlResult) -> Void) -> Void

    /// Connections served at once; more are closed at once (left in the listen queue, they would
    /// keep the listener readable and the main loop spinning).
    private static let maximumConnections = 8

    private let listener: Int32
    /// The path secretd bound itself, removed on ``close()``; nil for systemd's socket.
    private let boundPath: String?
    private let handler: Handler
    private var listenerWatch: UInt32 = 0
    private var connections: [Int32: Connection] = [:]

    /// One client's request as it arrives: the length first, then the frame in secure memory.
    private final class Connection {
        let fd: Int32
        var watch: UInt32 = 0
        var header: [UInt8] = []
        var frame: SecureBytes?
        var filled = 0
        /// The real uids the kernel named as senders of what arrived (-1: none named).
        var senders: Set<Int64> = []
        /// Whether the request went to the handler, which replies.
        var answering = false
        init(fd: Int32) { self.fd = fd }

        /// Who sent the request: root's PAM stack when real uid 0 sent every byte of it.
        var origin: PasswordChecks.Origin { senders == [0] ? .rootLogin : .client }
    }

    /// Takes the socket systemd passed, or else listens at the path under `runtimeDirectory`;
    /// nil (after logging why) when neither can be had.
    init?(runtimeDirectory: String?, handler: @escaping Handler) {
        self.handler = handler
        if let passed = SystemdSockets.take(named: SECRETD_CONTROL_SOCKET) {
            listener = passed
            boundPath = nil
        } else {
            guard let runtimeDirectory, runtimeDirectory.hasPrefix("/") else { return nil }  // no runtime directory: no login hand-off
            let directory = runtimeDirectory + "/" + SECRETD_CONTROL_DIRECTORY
            let path = directory + "/" + SECRETD_CONTROL_SOCKET
            guard let fd = PrivateSocket.listen(
                at: path, in: directory, consequence: "the login password cannot be handed over",
                otherListener: "it receives the login password, not this secretd")
            else { return nil }
            listener = fd
            boundPath = path
        }
        if keychain_pass_credentials(listener) != 0 {
            Log.warning("cannot ask for the senders' credentials on the login socket: \(String(cString: strerror(errno))); "
                        + "every login is taken for a process of the user")
        }
        listenerWatch = MainLoop.watch(fd: listener) { [weak self] in
            self?.acceptWaiting()
            return true
        }
    }

    /// Stops listening and closes every connection; removes the path secretd bound itself.
    func close() {
        MainLoop.removeWatch(listenerWatch)
        for connection in connections.values { finish(connection, reply: nil) }
        Glibc.close(listener)
        if let boundPath { unlink(boundPath) }
    }

    // MARK: - Connections

    private func acceptWaiting() {
        while true {
            let fd = keychain_accept(listener)
            guard fd >= 0 else { return }
            guard connections.count < Self.maximumConnections else {
                Glibc.close(fd)
                continue
            }
            guard keychain_peer_uid(fd) == Int64(getuid()) else {
                Log.warning("refused a login control connection from another user")
                Glibc.close(fd)
                continue
            }
            _ = keychain_pass_credentials(fd)
            let connection = Connection(fd: fd)
            connections[fd] = connection
            connection.watch = MainLoop.watch(fd: fd) { [weak self, weak connection] in
                guard let self, let connection else { return false }
                return self.read(connection)
            }
            MainLoop.after(seconds: Double(SECRETD_CONTROL_TIMEOUT_SECONDS)) { [weak self, weak connection] in
                guard let self, let connection, self.connections[connection.fd] === connection else { return }
                Log.warning(connection.answering
                    ? "a login control request was not answered in \(SECRETD_CONTROL_TIMEOUT_SECONDS) s (its client has given up); closed"
                    : "a login control client sent no complete request in \(SECRETD_CONTROL_TIMEOUT_SECONDS) s; closed")
                self.finish(connection, reply: nil)
            }
        }
    }

    /// Reads what has arrived; answers once the frame is whole. Returns whether to keep watching.
    private func read(_ connection: Connection) -> Bool {
        while true {
            if connection.frame == nil {
                var bytes = [UInt8](repeating: 0, count: 4 - connection.header.count)
                var sender: Int64 = -1
                let got = keychain_read_with_sender(connection.fd, &bytes, bytes.count, &sender)
                guard got > 0 else { return readFailed(connection, got) }
                connection.senders.insert(sender)
                connection.header += bytes[0..<got]
                guard let length = connection.header.withUnsafeBytes({ LoginControlRequest.announcedLength($0) }) else { continue }
                guard length >= 8, length <= LoginControlRequest.maximumFrameLength else {
                    Log.warning("a login control request announced \(length) bytes; refused")
                    finish(connection, reply: .failed)
                    return false
                }
                let frame = SecureBytes(count: length)
                frame.withMutableBytes { $0.copyBytes(from: connection.header) }
                connection.frame = frame
                connection.filled = 4
            }
            guard let frame = connection.frame else { return false }
            var sender: Int64 = -1
            let got = frame.withMutableBytes {
                keychain_read_with_sender(connection.fd, $0.baseAddress! + connection.filled, $0.count - connection.filled, &sender)
            }
            guard got > 0 else { return readFailed(connection, got) }
            connection.senders.insert(sender)
            connection.filled += got
            guard connection.filled == frame.count else { continue }
            let request: LoginControlRequest
            do {
                request = try frame.withBytes { (bytes) throws(LoginControlRequest.ParseError) in try LoginControlRequest.parse(bytes) }
            } catch {
                Log.warning("a login control request was refused: \(error)")
                finish(connection, reply: .failed)
                return false
            }
            connection.frame = nil  // wiped; the request holds its own copies
            connection.answering = true
            MainLoop.removeWatch(connection.watch)
            handler(request, connection.origin) { [weak self, weak connection] reply in
                guard let self, let connection else { return }
                self.finish(connection, reply: reply)
            }
            return false
        }
    }

    /// After a read of `got` bytes that gave none: waits on EAGAIN, else closes.
    private func readFailed(_ connection: Connection, _ got: Int) -> Bool {
        if got < 0 && (errno == EAGAIN || errno == EINTR) { return true }
        finish(connection, reply: nil)
        return false
    }

    /// Sends `reply` (if any) and closes the connection; the frame's secure memory is wiped as
    /// it is released.
    private func finish(_ connection: Connection, reply: LoginControlResult?) {
        // Only the connection itself: once closed, its descriptor number may be another one's.
        guard connections[connection.fd] === connection else { return }
        connections[connection.fd] = nil
        if let reply {
            let frame = reply.frame
            _ = frame.withUnsafeBytes { send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        if !connection.answering { MainLoop.removeWatch(connection.watch) }
        connection.frame = nil
        Glibc.close(connection.fd)
    }
}

internal import CProcess
import FoundationEssentials
import Glibc
import KeychainCore
import SecretCrypto

/// The Unix socket secretd's SSH agent listens on (`$XDG_RUNTIME_DIR/secretd/ssh-agent`),
/// bound by secretd itself as the login control socket is: its connections, each a stream of
/// agent messages (a uint32 length, then the message), each answered before the next is read.
/// Only connections from secretd's own uid are served (SO_PEERCRED). A message longer than
/// ``SSHAgentNames/maximumMessageLength`` gets a failure and its connection is closed; one that
/// has not arrived whole within ``messageTimeout`` closes its connection. Nothing one client
/// sends or fails to read holds up another: the socket never blocks, and each connection waits
/// only for its own reply. Runs on the main loop. The agent's only file with socket calls.
final class SSHAgentSocket {
    /// What the socket does with a whole message (its bytes after the length, in secure
    /// memory) from `peer`: calls `reply` once with the reply's bytes (length included), now or
    /// later.
    typealias Handler = (_ message: SecureBytes, _ peer: Peer, _ reply: @escaping ([UInt8]) -> Void) -> Void

    /// Who connected, read when it connected (SO_PEERCRED, then `/proc`).
    struct Peer {
        /// The process as secretd names callers (`exe:/usr/bin/ssh`, `unit:…`, `flatpak:…`),
        /// resolved as the bus side resolves them, so access-groups.conf applies alike; nil when
        /// it could not be told.
        var identity: CallerIdentity?
        /// Its process id; nil when the kernel did not say.
        var pid: Int32?
        /// Its command line when it connected, for the audit trail.
        var command: String?
        /// The `secretctl run` it is in, if any: it may use only the keys confined to the run's group.
        var run: RunScope?

        /// Its name: its run's (`run:NAME`), else its identity's.
        var name: String { run?.identity ?? identity?.description ?? "an unidentified process" }

        /// It, as the audit trail names who asked.
        var accessor: Accessor { Accessor(identity: run?.identity ?? identity?.description ?? "unknown", pid: pid, command: command) }

        /// The identity and the process id, for the person and the log.
        var description: String {
            switch (identity, pid) {
            case (_, let pid?) where run != nil: "\(name) (pid \(pid))"
            case (let identity?, let pid?): "\(identity) (pid \(pid))"
            case (nil, let pid?): "pid \(pid)"
            case (let identity?, nil): identity.description
            case (nil, nil): "an unknown process"
            }
        }
    }

    /// Connections served at once; more are closed at once.
    static let maximumConnections = 64
    /// Seconds a message may take to arrive once its first byte has.
    static let messageTimeout = 10.0
    /// Seconds a reply may wait for a client that does not read it.
    static let replyTimeout = 10.0

    /// The path it listens on.
    let path: String
    /// Whether secretd bound the path itself (and removes it on ``close()``), rather than
    /// systemd's `secretd.socket`.
    private let boundItself: Bool
    private let listener: Int32
    private let handler: Handler
    private var listenerWatch: UInt32 = 0
    /// Set by ``close()``.
    private var closed = false
    private var connections: [Int32: Connection] = [:]
    /// The `secretctl run` scopes a peer may be in.
    private let runs: RunScopes

    /// One client: the message arriving (length first, then the body in secure memory).
    private final class Connection {
        let fd: Int32
        /// Who connected.
        var peer = Peer()
        var watch: UInt32 = 0
        var header: [UInt8] = []
        var message: SecureBytes?
        var filled = 0
        /// When the message arriving must be whole (monotonic seconds); nil: none is arriving.
        var deadline: Double?
        /// Whether the connection's one timer is set (it checks ``deadline``).
        var timerSet = false
        /// Whether a message is with the handler (nothing more is read until it replies).
        var answering = false
        init(fd: Int32) { self.fd = fd }
    }

    /// Takes the socket systemd passed (`secretd.socket`'s `ssh-agent`), or else listens at
    /// `runtimeDirectory`'s `secretd/ssh-agent`; nil (after logging why) when neither can be
    /// had, or when another process answers there already.
    init?(runtimeDirectory: String?, runs: RunScopes, handler: @escaping Handler) {
        guard let runtimeDirectory, runtimeDirectory.hasPrefix("/") else { return nil }
        self.handler = handler
        self.runs = runs
        path = SSHAgentNames.socketPath(runtimeDirectory: runtimeDirectory)
        if let passed = SystemdSockets.take(named: SSHAgentNames.socketName) {
            listener = passed
            boundItself = false
        } else {
            guard let bound = PrivateSocket.listen(
                at: path, in: runtimeDirectory + "/" + SSHAgentNames.directoryName, consequence: "no SSH agent",
                otherListener: "no SSH agent in this secretd")
            else { return nil }
            listener = bound
            boundItself = true
        }
        watchListener()
    }

    private func watchListener() {
        listenerWatch = MainLoop.watch(fd: listener) { [weak self] in
            self?.acceptWaiting()
            return true
        }
    }

    /// Stops accepting for a second: out of descriptors, the waiting connection would keep the
    /// listener readable and the main loop spinning.
    private func pauseListening() {
        guard listenerWatch != 0 else { return }
        Log.warning("cannot accept an SSH agent connection: no file descriptor left; trying again in 1 s")
        MainLoop.removeWatch(listenerWatch)
        listenerWatch = 0
        MainLoop.after(seconds: 1) { [weak self] in
            guard let self, self.listenerWatch == 0, !self.closed else { return }
            self.watchListener()
        }
    }


    /// Stops listening, closes every connection and removes the socket.
    func close() {
        closed = true
        if listenerWatch != 0 { MainLoop.removeWatch(listenerWatch) }
        listenerWatch = 0
        for connection in Array(connections.values) { finish(connection) }
        Glibc.close(listener)
        if boundItself { unlink(path) }
    }


    // MARK: - Connections

    private func acceptWaiting() {
        while true {
            let fd = keychain_accept(listener)
            guard fd >= 0 else {
                if errno == EMFILE || errno == ENFILE { pauseListening() }
                return
            }
            guard connections.count < Self.maximumConnections else {
                Log.warning("refused an SSH agent connection: \(Self.maximumConnections) are open")
                Glibc.close(fd)
                continue
            }
            guard keychain_peer_uid(fd) == Int64(getuid()) else {
                Log.warning("refused an SSH agent connection from another user")
                Glibc.close(fd)
                continue
            }
            let connection = Connection(fd: fd)
            connection.peer = Self.peer(of: fd)
            connection.peer.run = connection.peer.pid.flatMap(runs.scope(containing:))
            connections[fd] = connection
            listen(to: connection)
        }
    }

    /// Reads the connection's next message when it arrives.
    private func listen(to connection: Connection) {
        var id: UInt32 = 0
        id = MainLoop.watch(fd: connection.fd) { [weak self, weak connection] in
            guard let self, let connection else { return false }
            let keep = self.read(connection)
            // GLib removes a watch that returns false: forget its id (unless a new one took over).
            if !keep && connection.watch == id { connection.watch = 0 }
            return keep
        }
        connection.watch = id
    }

    /// Reads what has arrived; hands a whole message to the handler. Returns whether to keep
    /// watching.
    private func read(_ connection: Connection) -> Bool {
        while true {
            if connection.message == nil {
                var bytes = [UInt8](repeating: 0, count: 4 - connection.header.count)
                let got = Glibc.read(connection.fd, &bytes, bytes.count)
                guard got > 0 else { return readFailed(connection, got) }
                if connection.header.isEmpty { startTimer(connection) }
                connection.header += bytes[0..<got]
                guard connection.header.count == 4 else { continue }
                let length = connection.header.reduce(0) { $0 << 8 | Int($1) }
                guard length <= SSHAgentNames.maximumMessageLength else {
                    Log.warning("an SSH agent client announced a message of \(length) bytes; refused, and its connection closed")
                    send(SSHWriter.message(.failure), to: connection, thenClose: true)
                    return false
                }
                guard length > 0 else {
                    connection.header = []
                    return answer(connection, SSHWriter.message(.failure))
                }
                connection.message = SecureBytes(count: length)
                connection.filled = 0
            }
            guard let message = connection.message else { return false }
            let got = message.withMutableBytes {
                Glibc.read(connection.fd, $0.baseAddress! + connection.filled, $0.count - connection.filled)
            }
            guard got > 0 else { return readFailed(connection, got) }
            connection.filled += got
            guard connection.filled == message.count else { continue }
            connection.message = nil
            connection.header = []
            connection.deadline = nil
            connection.answering = true
            handler(message, connection.peer) { [weak self, weak connection] reply in
                guard let self, let connection, self.connections[connection.fd] === connection else { return }
                connection.answering = false
                self.send(reply, to: connection, thenClose: false)
            }
            return false  // read again once the reply is out (``send``)
        }
    }

    /// Sends `reply` at once, without reading further first.
    private func answer(_ connection: Connection, _ reply: [UInt8]) -> Bool {
        connection.deadline = nil
        send(reply, to: connection, thenClose: false)
        return false
    }

    /// After a read of `got` bytes that gave none: waits on EAGAIN, else closes.
    private func readFailed(_ connection: Connection, _ got: Int) -> Bool {
        if got < 0 && (errno == EAGAIN || errno == EINTR) { return true }
        finish(connection)
        return false
    }

    /// Closes the connection when its message has not arrived whole in ``messageTimeout``. One
    /// timer per connection at most, however many messages it sends.
    private func startTimer(_ connection: Connection) {
        let deadline = MonotonicClock.seconds + Self.messageTimeout
        connection.deadline = deadline
        armTimer(connection, at: deadline)
    }

    /// Sets the connection's timer for `deadline`, unless one is set (it fires earlier, and
    /// looks again then).
    private func armTimer(_ connection: Connection, at deadline: Double) {
        guard !connection.timerSet else { return }
        connection.timerSet = true
        MainLoop.after(seconds: max(0, deadline - MonotonicClock.seconds)) { [weak self, weak connection] in
            guard let self, let connection else { return }
            connection.timerSet = false
            self.checkDeadline(connection)
        }
    }

    /// Closes the connection if its message is late; else waits for its deadline.
    private func checkDeadline(_ connection: Connection) {
        guard let deadline = connection.deadline, !connection.answering, connections[connection.fd] === connection else { return }
        if MonotonicClock.seconds >= deadline {
            Log.warning("an SSH agent client sent no complete message in \(Int(Self.messageTimeout)) s; closed")
            finish(connection)
        } else {
            armTimer(connection, at: deadline)
        }
    }

    /// Writes `bytes` (retrying while the client's buffer is full, up to ``replyTimeout``), then
    /// reads the connection's next message, or closes it.
    private func send(_ bytes: [UInt8], to connection: Connection, thenClose: Bool, deadline: Double? = nil) {
        guard connections[connection.fd] === connection else { return }
        var sent = 0
        while sent < bytes.count {
            let wrote = bytes.withUnsafeBytes {
                Glibc.send(connection.fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if wrote > 0 {
                sent += wrote
                continue
            }
            if wrote < 0 && errno == EINTR { continue }
            guard wrote < 0, errno == EAGAIN else { return finish(connection) }
            let now = MonotonicClock.seconds
            let limit = deadline ?? now + Self.replyTimeout
            guard now < limit else {
                Log.warning("an SSH agent client did not read its reply in \(Int(Self.replyTimeout)) s; closed")
                return finish(connection)
            }
            let rest = Array(bytes[sent...])
            MainLoop.after(seconds: 0.05) { [weak self, weak connection] in
                guard let self, let connection else { return }
                self.send(rest, to: connection, thenClose: thenClose, deadline: limit)
            }
            return
        }
        if thenClose { return finish(connection) }
        listen(to: connection)
    }

    /// The process at the other end of `fd` (SO_PEERCRED), named as secretd names callers.
    private static func peer(of fd: Int32) -> Peer {
        // struct ucred, spelled out (glibc declares it only under _GNU_SOURCE).
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, credentials.pid > 0 else { return Peer() }
        let identity = try? CallerIdentity.resolve(pid: credentials.pid, receivedAt: CallerIdentity.ticksSinceBoot()).get()
        return Peer(
            identity: identity, pid: credentials.pid, command: CallerIdentity.commandLine(pid: credentials.pid))
    }


    /// Closes the connection; a message arriving is wiped as it is released.
    private func finish(_ connection: Connection) {
        // Only the connection itself: once closed, its descriptor number may be another one's.
        guard connections[connection.fd] === connection else { return }
        connections[connection.fd] = nil
        if connection.watch != 0 { MainLoop.removeWatch(connection.watch) }
        connection.watch = 0
        connection.message = nil
        Glibc.close(connection.fd)
    }
}

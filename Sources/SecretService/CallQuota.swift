import Synchronization

/// How much each client may have waiting in secretd: calls received but not yet answered,
/// and the bytes counted for them.
///
/// sd-bus reads a message only when secretd asks for the next one, and most calls are answered
/// at once, so calls wait in secretd only while their new client is being identified (sd-bus
/// keeps reading meanwhile) or while their replies wait for a commit. A client that floods
/// calls then (or sends calls flagged `NO_REPLY_EXPECTED`, which the bus does not count against
/// its pending replies) would make that backlog grow without bound. ``BusServer`` asks
/// ``admit(sender:serial:bytes:silent:)`` for every call and refuses the ones over the limits
/// at once; ``replied(to:serial:)`` sees every reply go out. A call counts the bytes of its
/// arguments (``SDBusValues/payloadSize(_:upTo:)``: sd-bus does not say a message's size) plus
/// ``Limits/overhead``. A large call is admitted by what its first ``BusServer/readApartFrom``
/// bytes take, and counted whole (``recount(sender:serial:bytes:)``) once its arguments are read
/// off the loop; its client's next calls are measured whole meanwhile, so at most one call of a
/// client is counted short, and never by more than one message.
///
/// Calls waiting from all clients together have a limit too
/// (``Limits/descriptorBound(openFiles:)``), because any call may carry file descriptors and
/// secretd's connection has to take them: the desktop portal's `RetrieveSecret` passes a pipe,
/// and it comes to `org.freedesktop.secrets` wherever gnome-keyring's `gnome-keyring.portal` is
/// installed (its `DBusName`), which xdg-desktop-portal 1.16 prefers to `secretd.portal` (same
/// `UseIn`, first by name) and which many desktops' `portals.conf` name for later versions
/// (`Secret=gnome-keyring`). A connection that takes no descriptors, with the portal backend on
/// a second one under a name of its own, would break sandboxed apps there.
///
/// Used from the main loop only; the lock keeps it safe to share.
final class CallQuota: Sendable {
    /// The limits for each client connection.
    struct Limits: Sendable {
        /// Calls waiting for their reply.
        var calls: Int
        /// Of those, calls sent without expecting a reply (ordinary clients send none; a flood
        /// of them is not slowed down by the bus, so it gets a much lower limit).
        var silentCalls: Int
        /// Bytes of arguments of those calls (each call counts ``overhead`` more).
        var bytes: Int
        /// What one waiting call costs besides its arguments (its sd-bus message and queue entry).
        var overhead: Int = 1024
        /// Calls waiting from all clients together. A waiting call holds its message, and with it
        /// the file descriptors it carries, which any message may (``descriptorBound(openFiles:)``).
        var allClients: Int = .max
        /// Once ``allClients`` are waiting, a client with fewer than ``fewCalls`` of its own
        /// waiting may still add this many more (all such clients together), so one that makes a
        /// call at a time is served while others flood.
        var roomForFewCalls: Int = 0
        /// What counts as few calls waiting, for ``roomForFewCalls``.
        var fewCalls: Int = 4

        /// The calls all clients together may have waiting when secretd may have `openFiles`
        /// descriptors open: each call may carry ``descriptorsPerMessage``, ``reservedFiles`` stay
        /// for secretd's own (its database, sockets, pinentry's pipes), and the
        /// ``roomForFewCallsBound`` calls past the limit have theirs. Never under
        /// ``minimumAllClients``, so bulk clients keep working where the limit is low; below
        /// ``soundOpenFiles`` the bound then holds only for calls that carry fewer descriptors.
        static func descriptorBound(openFiles: Int) -> Int {
            max(minimumAllClients, (openFiles - reservedFiles) / descriptorsPerMessage - roomForFewCallsBound)
        }
        /// The least open files for which ``descriptorBound(openFiles:)`` holds whatever each call
        /// carries: 268,192 (systemd gives 524,288 as the hard limit).
        static let soundOpenFiles =
            reservedFiles + (minimumAllClients + roomForFewCallsBound) * descriptorsPerMessage
        /// The ``roomForFewCalls`` secretd gives: 32 calls.
        static let roomForFewCallsBound = 32
        /// The most descriptors one message can carry: Linux passes at most 253 (`SCM_MAX_FD`,
        /// unix(7)) in one `sendmsg`, whatever the bus allows (Debian's session bus, dbus-daemon,
        /// allows 16; other buses may allow more).
        static let descriptorsPerMessage = 253
        /// Descriptors kept for secretd's own use.
        static let reservedFiles = 1024
        /// The least ``allClients``: a libsecret search of 1,000 items sends 1,000 calls at once.
        static let minimumAllClients = 1024
    }

    /// The outcome for one call.
    enum Admission: Equatable {
        /// It is queued.
        case admitted
        /// It is over a limit of its client's; `first` for the client's first refusal (the one
        /// worth logging).
        case refused(first: Bool)
        /// All clients together have ``Limits/allClients`` calls waiting (and the room for
        /// clients with few calls is used up, or this one has more); `first` for the first
        /// refusal since none were waiting.
        case refusedAllClients(first: Bool)
    }

    /// What a reply means for the quota.
    struct Reply: Equatable {
        /// It answers a call sent without expecting a reply: drop it.
        var drop = false
        /// It was the last of a backlog (``backlog`` calls or more): the memory the backlog
        /// took can be handed back to the system.
        var drainedBacklog = false
    }

    /// Waiting calls that make a backlog worth handing memory back after.
    static let backlog = 1024

    private struct Client {
        /// Serial of each waiting call, and the bytes counted for it.
        var waiting: [UInt32: Int] = [:]
        var bytes = 0
        /// Waiting calls the client sent without expecting a reply: secretd's reply is dropped.
        var silent: Set<UInt32> = []
        /// The most calls it had waiting since it last had none.
        var highWater = 0
    }

    private struct State {
        var clients: [String: Client] = [:]
        /// Calls waiting from all clients.
        var total = 0
        /// Whether a call was refused for ``Limits/allClients`` since no call was waiting.
        var refusedAllClients = false
        /// Clients refused at least once (logged once each).
        var refused: Set<String> = []
    }

    let limits: Limits
    private let state = Mutex(State())

    init(limits: Limits) {
        self.limits = limits
    }

    /// Counts call `serial` from `sender`, with `bytes` of arguments, unless it would put the
    /// client over a limit. `silent`: the client expects no reply (the one secretd sends anyway
    /// is dropped by ``replied(to:serial:)``).
    func admit(sender: String, serial: UInt32, bytes: Int, silent: Bool) -> Admission {
        let cost = bytes + limits.overhead
        return state.withLock { state in
            var client = state.clients[sender] ?? Client()
            let room = client.waiting.count < limits.fewCalls ? limits.roomForFewCalls : 0
            if state.total >= limits.allClients + room {
                defer { state.refusedAllClients = true }
                return .refusedAllClients(first: !state.refusedAllClients)
            }
            if client.waiting.count >= limits.calls || (silent && client.silent.count >= limits.silentCalls)
                || (client.bytes + cost > limits.bytes && !client.waiting.isEmpty)
            {
                return .refused(first: state.refused.insert(sender).inserted)
            }
            client.waiting[serial] = cost
            client.bytes += cost
            client.highWater = max(client.highWater, client.waiting.count)
            if silent { client.silent.insert(serial) }
            state.clients[sender] = client
            state.total += 1
            return .admitted
        }
    }

    /// Counts call `serial` of `sender`, admitted with less, as `bytes` of arguments from now on.
    func recount(sender: String, serial: UInt32, bytes: Int) {
        state.withLock { state in
            guard var client = state.clients[sender], let counted = client.waiting[serial] else { return }
            let cost = bytes + limits.overhead
            client.waiting[serial] = cost
            client.bytes += cost - counted
            state.clients[sender] = client
        }
    }

    /// Notes a reply to call `serial` of `destination`.
    func replied(to destination: String, serial: UInt32) -> Reply {
        state.withLock { state in
            guard var client = state.clients[destination], let cost = client.waiting.removeValue(forKey: serial) else {
                return Reply()
            }
            client.bytes -= cost
            state.total -= 1
            if state.total == 0 { state.refusedAllClients = false }
            let reply = Reply(
                drop: client.silent.remove(serial) != nil,
                drainedBacklog: client.waiting.isEmpty && client.highWater >= Self.backlog)
            state.clients[destination] = client.waiting.isEmpty ? nil : client
            return reply
        }
    }

    /// Forgets a client that disconnected; true when it left a backlog of calls behind.
    @discardableResult
    func forget(_ sender: String) -> Bool {
        state.withLock { state in
            state.refused.remove(sender)
            let client = state.clients.removeValue(forKey: sender)
            state.total -= client?.waiting.count ?? 0
            if state.total == 0 { state.refusedAllClients = false }
            return (client?.highWater ?? 0) >= Self.backlog
        }
    }

    /// Forgets every call (the connection they came on is gone).
    func reset() {
        state.withLock { state in
            state.clients.removeAll()
            state.total = 0
            state.refusedAllClients = false
        }
    }

    /// The calls and bytes `sender` has waiting.
    func waiting(for sender: String) -> (calls: Int, bytes: Int) {
        state.withLock { state in state.clients[sender].map { ($0.waiting.count, $0.bytes) } ?? (0, 0) }
    }
}

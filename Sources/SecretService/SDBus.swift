// With SDBus+Bus.swift, SDBus+MainLoop.swift and SDBus+Values.swift, the only files of the
// daemon that call libsystemd's sd-bus: the bus connection, dispatching calls to the handler,
// replies, signals and bus-name ownership. Everything runs on the main loop's thread.
//
// Why sd-bus and not GDBus (issue 20): GDBus (GLib 2.74) closed secretd's connection on some
// valid messages it misread, which any client could send; it decoded every message into a
// GVariant tree on a worker thread and handed each call to the main loop and its reply back.
// sd-bus parses strictly, reads only what it is asked for, and runs on the thread that calls it.

internal import CSystemd
internal import CProcess
import FoundationEssentials
import Glibc
import KeychainCore
import DBusValues

/// A method call as the daemon's logic sees it.
struct MethodCall {
    /// The caller's unique bus name.
    var sender: String
    /// The object path called.
    var path: String
    /// The interface.
    var interface: String
    /// The method name.
    var method: String
    /// The arguments, already checked against the method's declaration (``Introspection``).
    var arguments: [DBusValue]
    /// Lets the sender's next calls of this same method be handled before this one is answered,
    /// which a large call (read off the loop) otherwise waits for: the handler keeps their
    /// order from then on (an import batch, once planned: ``BatchesInFlight``). Does nothing for
    /// a call that holds no other.
    var letSameMethodGoAhead: () -> Void = {}
}

/// What answers calls on the objects a ``BusServer`` exports.
protocol BusHandler: AnyObject {
    /// Handles a method call; the value is the reply's tuple of out arguments.
    func handle(_ call: MethodCall) -> Result<DBusValue, SecretServiceError>
    /// Handles a call of a method declared ``BusInterface/Method/repliesLater``: `reply` is
    /// called once, now or when the answer is known (after a prompt, say).
    func handle(_ call: MethodCall, replyLater reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void)
    /// Reads a property.
    func property(_ name: String, interface: String, path: String, sender: String) -> Result<DBusValue, SecretServiceError>
    /// Reads the properties `names` of one object, looked up once (`GetAll`): those that cannot
    /// be read are left out; an object that does not exist is `NoSuchObject`.
    func properties(_ names: [String], interface: String, path: String, sender: String)
        -> Result<[(name: String, value: DBusValue)], SecretServiceError>
    /// Starts finding out who `sender` is, unless that is known; returns false when it is (the
    /// call goes ahead at once). Otherwise `then` runs once the bus has answered, with the
    /// refusal to send if the sender may not use secretd.
    func identify(_ sender: String, then: @escaping (SecretServiceError?) -> Void) -> Bool
    /// Writes a property; ``SecretServiceError/waitForWrite`` as a call's handling may answer
    /// (the server runs it again once the write in progress has ended).
    func setProperty(_ name: String, interface: String, path: String, value: DBusValue, sender: String) -> SecretServiceError?
    /// The child node names under `path` that are objects (for `Introspect`).
    func children(of path: String, sender: String) -> [String]
    /// The interfaces of the kind of object `path` names, whether or not it exists (the
    /// handler answers `NoSuchObject` for one that does not); none for a path that names no
    /// kind of object, which the server answers with `NoSuchObject` itself.
    func interfaces(at path: String) -> [String]
    /// Whether an object `sender` may see is at `path`; asked only before answering a call
    /// that names a method, interface or property the object lacks, so that one that is not
    /// there is `NoSuchObject` whatever the call asked.
    func objectExists(at path: String, sender: String) -> Bool
    /// What replies and signals wait behind until the writes before them are committed.
    var commitBarrier: CommitBarrier { get }
    /// Runs `body` once the write that made calls answer ``SecretServiceError/waitForWrite``
    /// has ended (at once if none is in progress); those calls then run again.
    func whenWritesEnd(_ body: @escaping () -> Void)
}

/// The daemon's connection to the session bus and the objects it serves under
/// `/org/freedesktop/secrets`.
final class BusServer {
    /// The connection (`sd_bus *`).
    let bus: OpaquePointer
    private(set) weak var handler: (any BusHandler)?
    /// What replies and signals wait behind (the handler's).
    private let barrier: CommitBarrier
    /// Hands the memory calls freed back to the system.
    let memory = MemoryTrimmer()
    /// What each client may have waiting (calls waiting to be identified, replies waiting for
    /// a commit).
    let quota: CallQuota
    /// The main loop's handle on the connection's socket (SDBus+MainLoop.swift).
    var sourceTag: UnsafeMutableRawPointer?
    /// Whether sd-bus had more to dispatch when the last dispatch stopped.
    var hasMoreToProcess = false
    /// The poll condition the main loop watches the socket for.
    var watchedCondition: UInt32 = 0
    /// Whether the main loop's source is in ``dispatch()`` (which must not run inside itself).
    var dispatching = false
    /// Set once the main loop has stopped: calls still queued are refused, and calls read
    /// after it dropped unanswered (``BusServer/flushConnection(stall:limit:)``).
    private(set) var stopping = false
    /// The name asked for, its callbacks, and whether it was acquired (SDBus+Bus.swift).
    var ownership: (name: String, acquired: () -> Void, lost: (String) -> Void)?
    var disconnectHandler: ((String) -> Void)?

    /// The server of this process.
    nonisolated(unsafe) private(set) static weak var active: BusServer?

    /// Calls whose arguments take this many bytes or more (``SDBusValues/payloadSize(_:)``:
    /// a large secret, an import) are read off the main loop: copying them out of the message
    /// would hold up every other client's call for milliseconds. The size from which items are
    /// sealed and written off the loop too (``SealingQueue``).
    static let readApartFrom = SealingQueue.threshold
    /// Where large calls are read.
    private let offLoop: OffLoop

    /// Connects to the session bus (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`)
    /// and serves every path under `/org/freedesktop/secrets` and `/org/freedesktop/portal/desktop`
    /// through `handler`.
    init(handler: any BusHandler, quota: CallQuota.Limits, offLoop: OffLoop = .thread) throws(SecretServiceError) {
        var connection: OpaquePointer?
        let opened = sd_bus_open_user(&connection)
        guard opened >= 0, let connection else {
            throw .failed("cannot connect to the session bus: \(String(cString: strerror(-opened)))")
        }
        bus = connection
        sd_bus_set_description(bus, "secretd")
        self.handler = handler
        barrier = handler.commitBarrier
        self.quota = CallQuota(limits: quota)
        self.offLoop = offLoop
        // The Secret Service's objects, and the desktop portal's Secret backend with its requests.
        for root in [SecretServiceNames.Path.service, PortalNames.path] {
            let exported = sd_bus_add_fallback(bus, nil, root, { message, userData, _ in
                guard let message, let userData else { return 0 }
                Unmanaged<BusServer>.fromOpaque(userData).takeUnretainedValue().received(message)
                return 1  // answered, now or later
            }, Unmanaged.passUnretained(self).toOpaque())
            guard exported >= 0 else {
                throw .failed("cannot serve \(root): \(String(cString: strerror(-exported)))")
            }
        }
        // Peer.GetMachineId is sd-bus's to answer; where the machine has no id (/etc/machine-id
        // empty, as in a fresh chroot or container) it cannot, and would leave the call unanswered:
        // answer it here with an error instead.
        let filtered = sd_bus_add_filter(bus, nil, { message, _, _ in
            guard let message, sd_bus_message_is_method_call(message, SecretServiceNames.Interface.peer, "GetMachineId") > 0
            else { return 0 }
            var machine = sd_id128_t()
            guard sd_id128_get_machine(&machine) < 0 else { return 0 }
            var reply: OpaquePointer?
            let made = "org.freedesktop.DBus.Error.Failed".withCString { name in
                "this machine has no machine id (/etc/machine-id is empty)".withCString { text in
                    var error = sd_bus_error(name: name, message: text, _need_free: 0)
                    return sd_bus_message_new_method_error(message, &reply, &error)
                }
            }
            if made >= 0, let reply {
                sd_bus_send(nil, reply, nil)
                sd_bus_message_unref(reply)
            }
            return 1
        }, nil)
        guard filtered >= 0 else { throw .failed("cannot watch the bus's messages: \(String(cString: strerror(-filtered)))") }
        Self.active = self
        MainLoop.afterEachCallback = { BusServer.active?.scheduleFlush() }
        attachToMainLoop()
    }

    /// The bus is gone (the session ended, or the bus daemon stopped): nothing to serve.
    func connectionLost(reason: String) {
        guard !stopping else { return }
        stopping = true
        Log.info("the session bus is gone (\(reason)); exiting")
        MainLoop.quit()
    }

    // MARK: - Running

    /// Runs the main loop until SIGTERM, SIGINT or ``MainLoop/quit()``, then commits what the
    /// last calls wrote, sends their replies and waits until the bus holds them.
    static func runMainLoop() {
        MainLoop.run()
        active?.stopping = true
        active?.flush()
        active?.flushConnection()
    }

    // MARK: - Signals

    /// Broadcasts a signal, or sends it to `destination` (a unique name) only. Returns whether
    /// it waits for a commit (see ``deliver(_:)``).
    @discardableResult
    func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue], destination: String? = nil)
        -> Bool
    {
        var signal: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &signal, path, interface, name) >= 0, let signal else {
            Log.error("cannot make the signal \(interface).\(name)")
            return false
        }
        sd_bus_message_sensitive(signal)
        if let destination { sd_bus_message_set_destination(signal, destination) }
        guard SDBusValues.append(arguments, to: signal) else {
            Log.error("cannot write the arguments of the signal \(interface).\(name)")
            sd_bus_message_unref(signal)
            return false
        }
        let bus = self.bus
        return deliver(CommitBarrier.Held(send: {
            Self.send(signal, on: bus, what: "the signal \(interface).\(name)")
            sd_bus_message_unref(signal)
        }, fail: { _ in sd_bus_message_unref(signal) }))
    }

    /// Broadcasts `org.freedesktop.DBus.Properties.PropertiesChanged` with the new values of
    /// `changed` and the names of `invalidated` properties (to `destination` alone when given).
    func emitPropertiesChanged(
        path: String, interface: String, changed: [String: DBusValue], invalidated: [String] = [],
        destination: String? = nil
    ) {
        emitSignal(
            path: path, interface: Introspection.properties, name: "PropertiesChanged",
            arguments: [.string(interface), .properties(changed), .strings(invalidated)], destination: destination)
    }

    // MARK: - Dispatch

    /// A method call on a path under `/org/freedesktop/secrets` (sd-bus answers `Peer` itself).
    private func received(_ message: OpaquePointer) {
        sd_bus_message_sensitive(message)  // its buffer is wiped when it is freed: it may hold a secret
        // Read while the stop waits for the bus: not handled, nor answered (the bus tells its
        // caller NoReply once secretd is gone); nothing of it was written.
        guard !stopping else { return }
        guard let senderName = sd_bus_message_get_sender(message) else { return }
        let sender = String(cString: senderName)
        var serial: UInt64 = 0
        sd_bus_message_get_cookie(message, &serial)
        let silent = sd_bus_message_get_expect_reply(message) <= 0
        // A large call is measured up to the size that has it read off the loop, and whole there
        // (``partlyMeasured``); a client's next calls meanwhile are measured whole here.
        let whole = partlyMeasured[sender] != nil
        let bytes = SDBusValues.payloadSize(message, upTo: whole ? .max : Self.readApartFrom)
        switch quota.admit(sender: sender, serial: UInt32(truncatingIfNeeded: serial), bytes: bytes, silent: silent) {
        case .admitted:
            if !whole, bytes >= Self.readApartFrom { partlyMeasured[sender] = message }
            queue(message, from: sender, bytes: bytes)
        case .refused(let first):
            if first {
                let limits = quota.limits
                Log.warning(
                    "client \(sender) has \(limits.calls) calls (\(limits.silentCalls) expecting no reply) "
                        + "or \(limits.bytes >> 20) MiB of arguments waiting; "
                        + "its calls over that are refused with LimitsExceeded (logged once per client)")
            }
            sendError(to: message, name: SecretServiceError.limitsExceeded("").dbusName,
                      text: "too many calls waiting for secretd from this connection; wait for the replies")
        case .refusedAllClients(let first):
            if first {
                Log.warning(
                    "\(quota.limits.allClients) calls from all clients are waiting (each may hold file descriptors); "
                        + "calls over that are refused with LimitsExceeded until they are answered")
            }
            sendError(to: message, name: SecretServiceError.limitsExceeded("").dbusName,
                      text: "too many calls waiting for secretd; try again shortly")
        }
    }

    // MARK: - Taking turns

    /// The calls read but not yet handled, per client, and the clients that have some, in
    /// the order they take turns. Every call read from the bus is queued here and the queues
    /// are served one call per client in turn (``serveQueuedCalls(upTo:)``), so a client that
    /// floods secretd delays the others by one call of its own, not by its whole backlog: the
    /// bus delivers calls in the order they were sent, a flood's first. The call quota bounds
    /// each queue.
    private var queued: [String: CallQueue] = [:]
    private var turns: [String] = []
    /// Each client's large calls being read off the loop or handled, in the order sent: its
    /// next calls wait in its queue until they are answered, so that they are handled in the
    /// order sent (a read right behind a large write sees it, as behind a small one) and one
    /// client reads one large call at a time. Only once the handler of each has let the calls
    /// of its method go ahead (``MethodCall/letSameMethodGoAhead``, in ``overtakable``) may the
    /// next call go, if it is of that method, up to ``largeCallsAtOnce`` in progress.
    private var largeCallsOf: [String: [OpaquePointer]] = [:]
    /// The large calls in progress whose handler let the next calls of their method go ahead.
    private var overtakable: Set<OpaquePointer> = []
    /// How many large calls of one client may be in progress at once (one being written while
    /// the next is read and planned).
    static let largeCallsAtOnce = 2
    /// Each client with a large call admitted by what its first ``readApartFrom`` bytes take
    /// (``CallQuota``), with that call: it is measured whole as its arguments are read off the
    /// loop, and the client's next calls are measured whole until then.
    private var partlyMeasured: [String: OpaquePointer] = [:]
    /// The clients whose large call was answered since the calls were last served: they get
    /// their turns back then.
    private var released: [String] = []
    /// The clients with a call waiting to run again once a large item's write has ended
    /// (``SecretServiceError/waitForWrite``): it is first in their queue, and they have no
    /// turn until then.
    private var waitingForWrite: Set<String> = []

    /// One client's calls waiting for their turns, first in first out; taking the first does
    /// not move the others (a flooder's queue holds thousands).
    private struct CallQueue {
        private var calls: [QueuedCall] = []
        private var head = 0

        var isEmpty: Bool { head == calls.count }

        mutating func append(_ call: QueuedCall) {
            // The taken calls' slots are given back once they are most of the array: each call
            // is moved at most once on average, and a queue that never empties stays small.
            if head >= 64 && head * 2 >= calls.count {
                calls.removeFirst(head)
                head = 0
            }
            calls.append(call)
        }

        mutating func removeFirst() -> QueuedCall {
            defer { head += 1 }
            return calls[head]
        }

        /// Puts `call` back before the others (a call taken that is to run again).
        mutating func prepend(_ call: QueuedCall) {
            if head > 0 {
                head -= 1
                calls[head] = call
            } else {
                calls.insert(call, at: 0)
            }
        }

        /// The first call not yet taken.
        var first: QueuedCall? { isEmpty ? nil : calls[head] }

        /// The calls not yet taken.
        var remaining: ArraySlice<QueuedCall> { calls[head...] }
    }

    /// A call read and waiting for its turn: the message (referenced while it waits) and the
    /// bytes its arguments take (``SDBusValues/payloadSize(_:)``, measured once, as it was read).
    private struct QueuedCall {
        let message: OpaquePointer
        let argumentBytes: Int
    }

    /// Keeps `message` (a call from `sender` whose arguments take `bytes`) for its turn.
    private func queue(_ message: OpaquePointer, from sender: String, bytes: Int) {
        sd_bus_message_ref(message)
        if queued[sender]?.isEmpty ?? true { turns.append(sender) }
        queued[sender, default: CallQueue()].append(QueuedCall(message: message, argumentBytes: bytes))
    }

    /// Whether calls are waiting for their turn.
    var hasQueuedCalls: Bool { !turns.isEmpty || !released.isEmpty }

    /// Handles up to `budget` queued calls, one per client in turn; a client whose large call
    /// is not yet answered has no turn (it gets it back when it is: ``release(_:from:)``).
    func serveQueuedCalls(upTo budget: Int) {
        for sender in released where queued[sender]?.isEmpty == false && !turns.contains(sender) { turns.append(sender) }
        released = []
        var left = budget
        while left > 0, !turns.isEmpty {
            let round = turns
            turns = []
            for sender in round {
                guard queued[sender]?.isEmpty == false, mayHandleNext(of: sender), !waitingForWrite.contains(sender) else { continue }
                if left > 0, let call = queued[sender]?.removeFirst() {
                    left -= 1
                    dispatch(call, from: sender)
                    sd_bus_message_unref(call.message)
                }
                if queued[sender]?.isEmpty == false { turns.append(sender) } else { queued[sender] = nil }
            }
        }
    }

    /// Whether `sender`'s first queued call may be handled now: no large call of theirs is in
    /// progress, or every one let the calls of its method go ahead, the first queued is of that
    /// method, and fewer than ``largeCallsAtOnce`` are in progress.
    private func mayHandleNext(of sender: String) -> Bool {
        guard let inProgress = largeCallsOf[sender], let last = inProgress.last else { return true }
        guard inProgress.count < Self.largeCallsAtOnce, inProgress.allSatisfy(overtakable.contains),
            let next = queued[sender]?.first
        else { return false }
        let (ahead, waiting) = (CallHeader(last), CallHeader(next.message))
        return (ahead.path, ahead.interface, ahead.method) == (waiting.path, waiting.interface, waiting.method)
    }

    /// Lets `sender`'s next calls of the method of `message`, a large call of theirs in
    /// progress, go ahead of it (``MethodCall/letSameMethodGoAhead``).
    private func letGoAhead(_ message: OpaquePointer, from sender: String) {
        guard largeCallsOf[sender]?.contains(message) == true, overtakable.insert(message).inserted else { return }
        released.append(sender)
        hasMoreToProcess = true
    }

    /// Forgets `message` as a large call of `sender`'s in progress; false when it was not one.
    private func endLargeCall(_ message: OpaquePointer, from sender: String) -> Bool {
        guard var inProgress = largeCallsOf[sender], let index = inProgress.firstIndex(of: message) else { return false }
        inProgress.remove(at: index)
        largeCallsOf[sender] = inProgress.isEmpty ? nil : inProgress
        overtakable.remove(message)
        return true
    }

    /// Puts `message` back first in its sender's queue, to run again once the write that
    /// made it answer ``SecretServiceError/waitForWrite`` has ended; the sender's calls wait
    /// until then, the other clients' go on.
    private func runAfterWrite(_ message: OpaquePointer, from sender: String) {
        sd_bus_message_ref(message)
        sd_bus_message_rewind(message, 1)
        _ = endLargeCall(message, from: sender)
        queued[sender, default: CallQueue()].prepend(
            QueuedCall(message: message, argumentBytes: SDBusValues.payloadSize(message, upTo: Self.readApartFrom)))
        let first = waitingForWrite.isEmpty
        waitingForWrite.insert(sender)
        guard first, let handler else { return }
        handler.whenWritesEnd { [weak self] in
            guard let self else { return }
            released.append(contentsOf: waitingForWrite)
            waitingForWrite = []
            hasMoreToProcess = true
        }
    }

    /// Gives `sender` their turns back if `message` is a large call they waited for.
    private func release(_ message: OpaquePointer, from sender: String) {
        guard endLargeCall(message, from: sender) else { return }
        released.append(sender)
        hasMoreToProcess = true
    }

    /// Drops the calls of a client that left the bus: nobody would read their replies.
    func dropQueuedCalls(of sender: String) {
        partlyMeasured[sender] = nil
        guard let calls = queued.removeValue(forKey: sender) else { return }
        for call in calls.remaining { sd_bus_message_unref(call.message) }
        turns.removeAll { $0 == sender }
    }

    /// Identifies the caller (once per client), then routes and answers the call.
    private func dispatch(_ call: QueuedCall, from sender: String) {
        let message = call.message
        memory.trimLater(after: MemoryTrimmer.interval)
        guard let handler, !stopping else {
            reply(to: message, from: sender, with: .failure(.failed("secretd is shutting down")))
            return
        }
        sd_bus_message_ref(message)
        let waiting = handler.identify(sender) { [weak self] refusal in
            defer { sd_bus_message_unref(message) }
            guard let self else { return }
            if let refusal {
                self.reply(to: message, from: sender, with: .failure(refusal))
            } else {
                self.dispatch(call, from: sender)
            }
        }
        if waiting { return }
        sd_bus_message_unref(message)
        if let result = route(call, from: sender, handler) { reply(to: message, from: sender, with: result) }
    }

    /// What the call asks, checked against the declared interfaces, and the handler's answer;
    /// nil when the handler replies later (a method declared ``BusInterface/Method/repliesLater``).
    private func route(_ call: QueuedCall, from sender: String, _ handler: any BusHandler)
        -> Result<DBusValue, SecretServiceError>?
    {
        let message = call.message
        let header = CallHeader(message)
        let (path, method, requested, signature) = (header.path, header.method, header.interface, header.signature)
        let served = handler.interfaces(at: path)

        if requested == Introspection.introspectable || (requested == nil && method == "Introspect" && served.isEmpty) {
            guard method == "Introspect" else { return .failure(.unknownMethod("no method \(method) in \(Introspection.introspectable)")) }
            guard signature.isEmpty else { return .failure(.invalidArgs("Introspect takes no arguments")) }
            let xml = Introspection.xml(interfaces: served, children: handler.children(of: path, sender: sender))
            return .success(.tuple([.string(xml)]))
        }
        guard !served.isEmpty else { return .failure(.noSuchObject("no object \(path)")) }
        guard call.argumentBytes >= Self.readApartFrom else {
            return answer(message, header, arguments: SDBusValues.readAll(message), from: sender, served: served, handler)
        }
        // A large call: its arguments are read off the loop, and its client's next calls wait
        // until it is answered (``largeCallsOf``). Nothing else touches the message meanwhile.
        largeCallsOf[sender, default: []].append(message)
        sd_bus_message_ref(message)
        let read = UncheckedBox(message)
        let measure = partlyMeasured[sender] == message
        offLoop.run(named: "secretd-read", {
            (bytes: measure ? SDBusValues.payloadSize(read.value) : nil, arguments: UncheckedBox(SDBusValues.readAll(read.value)))
        }) { [weak self] read in
            defer { sd_bus_message_unref(message) }
            guard let self else { return }
            let arguments = read.arguments
            if let bytes = read.bytes, partlyMeasured[sender] == message {
                partlyMeasured[sender] = nil
                var serial: UInt64 = 0
                sd_bus_message_get_cookie(message, &serial)
                quota.recount(sender: sender, serial: UInt32(truncatingIfNeeded: serial), bytes: bytes)
            }
            guard let handler = self.handler, !self.stopping else {
                self.reply(to: message, from: sender, with: .failure(.failed("secretd is shutting down")))
                return
            }
            if let result = self.answer(message, header, arguments: arguments.value, from: sender, served: served, handler) {
                self.reply(to: message, from: sender, with: result)
            }
        }
        return nil
    }

    /// The handler's answer to `message` (its `header`), whose `arguments` were read (nil:
    /// they cannot be); nil when the handler replies later.
    private func answer(
        _ message: OpaquePointer, _ header: CallHeader, arguments: [DBusValue]?, from sender: String, served: [String],
        _ handler: any BusHandler
    ) -> Result<DBusValue, SecretServiceError>? {
        let (path, method, requested, signature) = (header.path, header.method, header.interface, header.signature)
        guard let arguments else {
            return .failure(.invalidArgs("the arguments of \(method) cannot be read"))
        }
        let call = MethodCall(sender: sender, path: path, interface: requested ?? "", method: method, arguments: arguments)
        let routed = requested == Introspection.properties
            ? properties(call, signature: signature, served: served, handler)
            : self.method(call, signature: signature, served: served, handler, message: message)
        guard let result = routed else { return nil }
        switch result {
        case .failure(.unknownMethod), .failure(.unknownInterface), .failure(.unknownProperty), .failure(.propertyReadOnly):
            guard handler.objectExists(at: path, sender: sender) else { return .failure(.noSuchObject("no object \(path)")) }
            return result
        default:
            return result
        }
    }

    /// What a call's header names: the object, the method, its interface (if given) and the
    /// arguments' signature.
    private struct CallHeader {
        var path: String
        var method: String
        var interface: String?
        var signature: String

        init(_ message: OpaquePointer) {
            path = String(cString: sd_bus_message_get_path(message))
            method = String(cString: sd_bus_message_get_member(message))
            interface = sd_bus_message_get_interface(message).map { String(cString: $0) }
            signature = String(cString: sd_bus_message_get_signature(message, 1))
        }
    }

    /// A call of a method of a declared interface, checked against its declaration.
    private func method(
        _ call: MethodCall, signature: String, served: [String], _ handler: any BusHandler, message: OpaquePointer
    ) -> Result<DBusValue, SecretServiceError>? {
        let (path, method) = (call.path, call.method)
        let requested = call.interface.isEmpty ? nil : call.interface
        let candidates = requested.map { [$0] } ?? served
        guard let interface = candidates.first(where: { served.contains($0) && Introspection.interfaces[$0]?.method(method) != nil })
        else {
            if let requested, !served.contains(requested) {
                return .failure(.unknownInterface("the object \(path) has no interface \(requested)"))
            }
            return .failure(.unknownMethod("no method \(method) at \(path)" + (requested.map { " in \($0)" } ?? "")))
        }
        let declaration = Introspection.interfaces[interface]!.method(method)!
        let declared = declaration.inSignature
        guard signature == declared else {
            guard handler.objectExists(at: path, sender: call.sender) else { return .failure(.noSuchObject("no object \(path)")) }
            return .failure(.invalidArgs("\(method) takes arguments of type (\(declared)), not (\(signature))"))
        }
        var routed = call
        routed.interface = interface
        guard declaration.repliesLater else { return handler.handle(routed) }
        routed.letSameMethodGoAhead = { [weak self] in self?.letGoAhead(message, from: call.sender) }
        sd_bus_message_ref(message)
        handler.handle(routed) { [weak self] result in
            defer { sd_bus_message_unref(message) }
            self?.reply(to: message, from: call.sender, with: result)
        }
        return nil
    }

    /// Replies to `message` (unless it expects no reply) once the writes before it are
    /// committed; the call no longer counts against its sender's quota.
    private func reply(to message: OpaquePointer, from sender: String, with result: Result<DBusValue, SecretServiceError>) {
        if case .failure(.waitForWrite) = result, !stopping { return runAfterWrite(message, from: sender) }
        release(message, from: sender)
        if partlyMeasured[sender] == message { partlyMeasured[sender] = nil }
        var serial: UInt64 = 0
        sd_bus_message_get_cookie(message, &serial)
        let quota = self.quota
        let done = {
            if quota.replied(to: sender, serial: UInt32(truncatingIfNeeded: serial)).drainedBacklog {
                _ = keychain_release_free_memory()  // glibc keeps the heap a backlog took
            }
        }
        guard sd_bus_message_get_expect_reply(message) > 0 else {
            deliver(CommitBarrier.Held(send: done))
            return
        }
        switch result {
        case .success(let value):
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return }
            sd_bus_message_sensitive(reply)
            guard SDBusValues.append(value.tuple ?? [value], to: reply) else {
                sd_bus_message_unref(reply)
                Log.error("cannot write the reply of a call: a value D-Bus does not carry")
                sendError(to: message, name: SecretServiceError.incomplete.dbusName, text: SecretServiceError.incomplete.message)
                done()
                return
            }
            if case .tuple(let values) = value, values.count == 1, Self.isLarge(values[0]) { memory.trimLater() }
            sd_bus_message_ref(message)
            let bus = self.bus
            deliver(CommitBarrier.Held(send: {
                Self.send(reply, on: bus, what: "a reply")
                sd_bus_message_unref(reply)
                sd_bus_message_unref(message)
                done()
            }, fail: { [weak self] failure in
                sd_bus_message_unref(reply)
                self?.sendError(to: message, name: failure.dbusName, text: failure.message)
                sd_bus_message_unref(message)
                done()
            }))
        case .failure(let error):
            sd_bus_message_ref(message)
            deliver(CommitBarrier.Held(send: { [weak self] in
                self?.sendError(to: message, name: error.dbusName, text: error.message)
                sd_bus_message_unref(message)
                done()
            }))
        }
    }

    /// Sends an error reply to `message` now, unless it expects none.
    private func sendError(to message: OpaquePointer, name: String, text: String) {
        guard sd_bus_message_get_expect_reply(message) > 0 else { return }
        var reply: OpaquePointer?
        let made = name.withCString { namePointer in
            text.withCString { textPointer in
                var error = sd_bus_error(name: namePointer, message: textPointer, _need_free: 0)
                return sd_bus_message_new_method_error(message, &reply, &error)
            }
        }
        guard made >= 0, let reply else { return }
        Self.send(reply, on: bus, what: "an error reply")
        sd_bus_message_unref(reply)
    }

    /// Queues `message` on the connection; a failure is logged (it names the message, never
    /// its contents), since the caller then gets no answer.
    private static func send(_ message: OpaquePointer, on bus: OpaquePointer, what: String) {
        let result = sd_bus_send(bus, message, nil)
        if result < 0 {
            unsent += 1
            Log.error("cannot send \(what): \(String(cString: strerror(-result)))")
        }
    }

    /// How many replies, errors and signals sd-bus refused to queue since start (each logged):
    /// the stop reports it, since a refused reply of a committed write leaves its caller with
    /// NoReply.
    nonisolated(unsafe) static var unsent = 0

    /// Whether a reply value is one of the large ones (thousands of paths or secrets).
    private static func isLarge(_ value: DBusValue) -> Bool {
        switch value {
        case .array(_, let items): return items.count > 4096
        case .dictionary(_, _, let entries): return entries.count > 1024
        default: return false
        }
    }

    // MARK: - Properties

    /// `Get`, `Set` and `GetAll` on an object, as the handler reads and writes them, checked
    /// against the declared properties. Their replies wait for pending writes like every other
    /// reply, so nothing not yet durable is shown or acknowledged.
    private func properties(_ call: MethodCall, signature: String, served: [String], _ handler: any BusHandler)
        -> Result<DBusValue, SecretServiceError>
    {
        let declared = ["Get": "ss", "Set": "ssv", "GetAll": "s"]
        guard let expected = declared[call.method] else {
            return .failure(.unknownMethod("no method \(call.method) in \(Introspection.properties)"))
        }
        guard signature == expected, let interfaceName = call.arguments.first?.string else {
            guard handler.objectExists(at: call.path, sender: call.sender) else { return .failure(.noSuchObject("no object \(call.path)")) }
            return .failure(.invalidArgs("\(call.method) takes arguments of type (\(expected)), not (\(signature))"))
        }
        guard served.contains(interfaceName), let interface = Introspection.interfaces[interfaceName] else {
            return .failure(.unknownInterface("the object \(call.path) has no interface \(interfaceName)"))
        }
        if call.method == "GetAll" {
            return handler.properties(interface.properties.map(\.name), interface: interfaceName, path: call.path, sender: call.sender)
                .map { read in
                    .tuple([.dictionary(key: "s", value: "v", read.map { DBusValue.Entry(key: .string($0.name), value: .variant($0.value)) })])
                }
        }
        guard let name = call.arguments[1].string, let property = interface.property(name) else {
            return .failure(.unknownProperty("\(interfaceName) has no property \(call.arguments[1].string ?? "")"))
        }
        if call.method == "Get" {
            return handler.property(name, interface: interfaceName, path: call.path, sender: call.sender)
                .map { .tuple([.variant($0)]) }
        }
        guard property.writable else { return .failure(.propertyReadOnly("\(interfaceName).\(name) cannot be written")) }
        guard case .variant(let value) = call.arguments[2], value.signature == property.type else {
            return .failure(.invalidArgs("\(interfaceName).\(name) is of type \(property.type)"))
        }
        if let failure = handler.setProperty(name, interface: interfaceName, path: call.path, value: value, sender: call.sender) {
            return .failure(failure)
        }
        return .success(.tuple([]))
    }

    // MARK: - Group commit

    /// Sends `item` through the ``CommitBarrier``: now, or after the commit of the writes
    /// before it. Returns whether it waits.
    @discardableResult
    private func deliver(_ item: CommitBarrier.Held) -> Bool {
        barrier.deliver(item, inTurn: dispatching)
    }

    /// Ends a turn of calls (``CommitBarrier/endTurn(moreToDo:)``).
    func endTurn(moreToDo: Bool) { barrier.endTurn(moreToDo: moreToDo) }

    /// Commits once the loop is idle (``CommitBarrier/scheduleFlush()``).
    func scheduleFlush() { barrier.scheduleFlush() }

    /// Commits the pending writes, then sends what waited for them.
    func flush() { barrier.flush() }
}

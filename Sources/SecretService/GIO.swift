// With GIO+Connection.swift, GIO+CallQuota.swift and GIO+QuickReads.swift, the only files of
// the daemon that call GIO/GLib: the bus connection, object and subtree registration, GVariant
// conversion, signals, bus-name ownership and the main loop. Everything here runs on the thread
// that runs the main loop, except the two connection filters, which GDBus runs on its worker
// thread: the call quota's, and the quick reads' (which holds ``MainLoopLock`` while it uses
// the daemon, so the main loop and it never run at the same time).

internal import CGio
internal import CProcess
import Dispatch
import KeychainCore
import FoundationEssentials
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
    /// The arguments, already checked against the introspection data by GDBus.
    var arguments: [DBusValue]
}

/// What answers calls on the objects a ``BusServer`` exports.
protocol BusHandler: AnyObject {
    /// Handles a method call; the value is the reply's tuple of out arguments.
    func handle(_ call: MethodCall) -> Result<DBusValue, SecretServiceError>
    /// Reads a property.
    func property(_ name: String, interface: String, path: String, sender: String) -> Result<DBusValue, SecretServiceError>
    /// Starts finding out who `sender` is, unless that is known; returns false when it is (the
    /// call goes ahead at once). Otherwise `then` runs once the bus has answered, with the
    /// refusal to send if the sender may not use secretd.
    func identify(_ sender: String, then: @escaping (SecretServiceError?) -> Void) -> Bool
    /// Writes a property.
    func setProperty(_ name: String, interface: String, path: String, value: DBusValue, sender: String) -> SecretServiceError?
    /// The child node names under `path` that are objects (for subtrees).
    func children(of path: String, sender: String) -> [String]
    /// The interfaces the object at `path` implements. For a well-formed path of an object
    /// that does not exist, still the interfaces of its kind, so the call reaches ``handle(_:)``
    /// and the client gets `NoSuchObject` or `NoSession` rather than a generic D-Bus error.
    func interfaces(at path: String) -> [String]
    /// The reads that GDBus's thread may answer itself, without the main loop (see
    /// GIO+QuickReads.swift); asked once, when the server is created.
    var quickReads: [QuickRead] { get }
    /// Whether GDBus's thread may answer `call` (one of ``quickReads``, its arguments of the
    /// right types) at once: only when that needs nothing from the main loop and no wait.
    func answersAtOnce(_ call: MethodCall) -> Bool
    /// Whether writes are waiting for ``commitPending()``; replies and signals wait with them.
    var hasPendingCommit: Bool { get }
    /// Makes the waiting writes durable; false when that failed (they are rolled back).
    func commitPending() -> Bool
}

/// The daemon's connection to the session bus and the objects it exports.
final class BusServer {
    /// The connection to the bus; replaced when the bus closes it (see GIO+Connection.swift).
    var connection: OpaquePointer
    private let nodeInfo: UnsafeMutablePointer<GDBusNodeInfo>
    private(set) weak var handler: (any BusHandler)?
    var subtrees: [String: UInt32] = [:]
    /// The name asked for with ``ownName(_:replace:acquired:lost:)``, to ask again after reconnecting.
    var ownedName: (name: String, replace: Bool)?
    var ownerID: UInt32 = 0
    /// Bumped whenever an ownership stops counting (its connection closed), so its late
    /// callbacks are ignored.
    var ownershipGeneration = 0
    var nameCallbacks: (acquired: () -> Void, lost: (String) -> Void)?
    var disconnectHandler: ((String) -> Void)?
    /// Runs after a reconnection, once everything is exported and the name asked for again.
    var reconnectHandler: (() -> Void)?
    /// What each client may have waiting (checked by the connection's filter).
    let quota: CallQuota
    /// The in-signature of each call the handler may answer in GDBus's thread (see
    /// GIO+QuickReads.swift).
    let quickReads: [QuickRead: String]

    /// Connects to the session bus; `introspection` is the XML of every interface served.
    init(introspection: String, handler: any BusHandler, quota: CallQuota.Limits) throws(SecretServiceError) {
        var error: UnsafeMutablePointer<GError>?
        guard let info = g_dbus_node_info_new_for_xml(introspection, &error) else {
            throw .failed("bad introspection data: \(Self.take(error))")
        }
        Self.registerErrorNames()
        Self.quietDecodeWarnings()
        self.connection = try Self.connectToSessionBus()
        self.nodeInfo = info
        self.handler = handler
        self.quota = CallQuota(limits: quota)
        self.quickReads = Self.signatures(of: handler.quickReads, in: info)
        Self.takeMainLoopLock()  // before the filters run: from here on the daemon is under it
        Self.active = self
        adopt(connection)
    }

    // MARK: - Exporting objects

    /// Exports a dynamic subtree: the object at `path` and its direct children, as the handler
    /// reports them at call time.
    ///
    /// Every object secretd serves is a subtree's, the service's own included: GDBus takes a
    /// call to a subtree's object through two main-loop hops and a call to an object registered
    /// on its own through one, so with both kinds a client's call could overtake the one it sent
    /// before (a `SearchItems` on the service answered before the `CreateItem` on a collection
    /// sent ahead of it). With one kind, calls are handled in the order they came.
    func registerSubtree(_ path: String) throws(SecretServiceError) {
        guard subtrees[path] == nil else { return }
        var error: UnsafeMutablePointer<GError>?
        let id = g_dbus_connection_register_subtree(
            connection, path, Self.subtreeVTable, G_DBUS_SUBTREE_FLAGS_DISPATCH_TO_UNENUMERATED_NODES,
            Unmanaged.passUnretained(self).toOpaque(), nil, &error)
        if id == 0 { throw .failed("cannot export subtree \(path): \(Self.take(error))") }
        subtrees[path] = id
    }

    /// Stops exporting the subtree at `path`.
    func unregisterSubtree(_ path: String) {
        if let id = subtrees.removeValue(forKey: path) { g_dbus_connection_unregister_subtree(connection, id) }
    }

    // MARK: - Signals

    /// Broadcasts a signal, or sends it to `destination` (a unique name) only. Returns whether
    /// it waits for a commit (see ``deliver(_:)``).
    @discardableResult
    func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue], destination: String? = nil)
        -> Bool
    {
        let parameters = g_variant_ref_sink(DBusValue.makeVariant(.tuple(arguments)))
        let connection = self.connection
        return deliver(Held(send: {
            g_dbus_connection_emit_signal(connection, destination, path, interface, name, parameters, nil)
            g_variant_unref(parameters)
        }, fail: { g_variant_unref(parameters) }))
    }

    /// Broadcasts `org.freedesktop.DBus.Properties.PropertiesChanged` with the new values of
    /// `changed` and the names of `invalidated` properties (for values too large to send each
    /// time, such as a collection's Items).
    ///
    /// A broadcast that only invalidates is not repeated while the same one is the last
    /// invalidation waiting for the commit: every store invalidates its collection's Items,
    /// and writes that arrive together share a commit. A change with values in between is not
    /// skipped over: the invalidation after it is sent again.
    func emitPropertiesChanged(
        path: String, interface: String, changed: [String: DBusValue], invalidated: [String] = [],
        destination: String? = nil
    ) {
        let invalidates = changed.isEmpty && destination == nil
        if invalidates, let last = lastHeldInvalidation,
            last.path == path, last.interface == interface, last.names == invalidated
        {
            return
        }
        if !changed.isEmpty { lastHeldInvalidation = nil }
        let entries = changed.sorted { $0.key < $1.key }.map {
            DBusValue.Entry(key: .string($0.key), value: .variant($0.value))
        }
        let waits = emitSignal(
            path: path, interface: "org.freedesktop.DBus.Properties", name: "PropertiesChanged",
            arguments: [
                .string(interface), .dictionary(key: "s", value: "v", entries),
                .array(element: "s", invalidated.map { .string($0) }),
            ], destination: destination)
        if invalidates && waits { lastHeldInvalidation = (path, interface, invalidated) }
    }

    /// Calls `handler` with the unique name of every client that disconnects from the bus.
    func watchDisconnects(_ handler: @escaping (String) -> Void) {
        disconnectHandler = handler
        subscribeToDisconnects()
    }

    /// Subscribes the connection to the bus's `NameOwnerChanged` for ``watchDisconnects(_:)``.
    func subscribeToDisconnects() {
        guard disconnectHandler != nil else { return }
        g_dbus_connection_signal_subscribe(
            connection, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", "/org/freedesktop/DBus",
            nil, G_DBUS_SIGNAL_FLAGS_NONE,
            { _, _, _, _, _, parameters, userData in
                guard let parameters, let userData,
                    case .tuple(let fields)? = DBusValue.makeValue(parameters), fields.count == 3,
                    let name = fields[0].string, let newOwner = fields[2].string, newOwner.isEmpty, name.hasPrefix(":")
                else { return }
                let server = Unmanaged<BusServer>.fromOpaque(userData).takeUnretainedValue()
                // Its queued calls are still answered (to nobody); then their memory can go.
                if server.quota.forget(name) { server.returnMemoryLater(after: 2) }
                server.disconnectHandler?(name)
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    // MARK: - Bus name

    /// Asks for `name` without queueing; `acquired` or `lost` runs from the main loop.
    /// With `replace`, takes the name from an owner that allows replacement. After a
    /// reconnection the name is asked for again, and the callbacks run again.
    func ownName(_ name: String, replace: Bool, acquired: @escaping () -> Void, lost: @escaping (String) -> Void) {
        nameCallbacks = (acquired, lost)
        ownedName = (name, replace)
        var flags = G_BUS_NAME_OWNER_FLAGS_ALLOW_REPLACEMENT.rawValue | G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE.rawValue
        if replace { flags |= G_BUS_NAME_OWNER_FLAGS_REPLACE.rawValue }
        let ownership = Unmanaged.passRetained(Ownership(server: self, generation: ownershipGeneration)).toOpaque()
        ownerID = g_bus_own_name_on_connection(
            connection, name, GBusNameOwnerFlags(rawValue: flags),
            { _, _, userData in
                guard let server = Unmanaged<Ownership>.fromOpaque(userData!).takeUnretainedValue().current else { return }
                server.nameCallbacks?.acquired()
            },
            { _, name, userData in
                guard let server = Unmanaged<Ownership>.fromOpaque(userData!).takeUnretainedValue().current else { return }
                server.nameCallbacks?.lost(name.map { String(cString: $0) } ?? "")
            }, ownership, { Unmanaged<Ownership>.fromOpaque($0!).release() })
    }

    /// One ``ownName(_:replace:acquired:lost:)`` request, as the user data of its callbacks.
    private final class Ownership {
        weak var server: BusServer?
        let generation: Int
        init(server: BusServer, generation: Int) {
            self.server = server
            self.generation = generation
        }
        /// The server, while this ownership still counts.
        var current: BusServer? { server.flatMap { $0.ownershipGeneration == generation ? $0 : nil } }
    }

    /// The unique name and process id of the current owner of `name`, if any.
    func owner(of name: String) -> (uniqueName: String, pid: UInt32?)? {
        guard case .tuple(let reply)? = callBus("GetNameOwner", [.string(name)]), let unique = reply.first?.string else {
            return nil
        }
        if case .tuple(let pidReply)? = callBus("GetConnectionUnixProcessID", [.string(unique)]),
            case .uint32(let pid)? = pidReply.first
        {
            return (unique, pid)
        }
        return (unique, nil)
    }

    /// The uid and process id the bus daemon recorded for the connection `sender`
    /// (`GetConnectionCredentials`); nil when it is gone or the bus does not know.
    ///
    /// This waits for the bus's answer with the main loop stopped (for property reads, which
    /// must be answered at once); method calls use ``credentials(of:completion:)``.
    func credentials(of sender: String) -> (uid: UInt32, pid: UInt32?)? {
        // The answer comes after whatever the bus queued for secretd before it: wait long.
        Self.credentials(in: callBus("GetConnectionCredentials", [.string(sender)], timeout: 30_000))
    }

    /// ``credentials(of:)`` without waiting: `completion` runs on the main loop with the answer.
    func credentials(of sender: String, completion: @escaping ((uid: UInt32, pid: UInt32?)?) -> Void) {
        let box = Unmanaged.passRetained(ClosureBox(value: completion)).toOpaque()
        g_dbus_connection_call(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionCredentials",
            DBusValue.makeVariant(.tuple([.string(sender)])), nil, G_DBUS_CALL_FLAGS_NONE, -1, nil,
            { source, result, userData in
                let completion = Unmanaged<ClosureBox<((uid: UInt32, pid: UInt32?)?) -> Void>>.fromOpaque(userData!)
                    .takeRetainedValue().value
                let reply = g_dbus_connection_call_finish(OpaquePointer(source), result, nil)
                defer { if let reply { g_variant_unref(reply) } }
                completion(BusServer.credentials(in: reply.flatMap { DBusValue.makeValue($0) }))
            }, box)
    }

    /// The uid and pid in a `GetConnectionCredentials` reply.
    private static func credentials(in reply: DBusValue?) -> (uid: UInt32, pid: UInt32?)? {
        guard case .tuple(let reply)? = reply, case .dictionary(_, _, let entries)? = reply.first else { return nil }
        var uid: UInt32?
        var pid: UInt32?
        for entry in entries {
            guard case .variant(.uint32(let number)) = entry.value else { continue }
            switch entry.key.string {
            case "UnixUserID": uid = number
            case "ProcessID": pid = number
            default: break
            }
        }
        return uid.map { ($0, pid) }
    }

    /// Whether `name` (a client's unique name) is still on the bus.
    func hasOwner(_ name: String) -> Bool {
        guard case .tuple(let reply)? = callBus("NameHasOwner", [.string(name)]), case .boolean(let owned)? = reply.first
        else { return false }
        return owned
    }

    private func callBus(_ method: String, _ arguments: [DBusValue], timeout: Int32 = 5_000) -> DBusValue? {
        let reply = g_dbus_connection_call_sync(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method,
            DBusValue.makeVariant(.tuple(arguments)), nil, G_DBUS_CALL_FLAGS_NONE, timeout, nil, nil)
        guard let reply else { return nil }
        defer { g_variant_unref(reply) }
        return DBusValue.makeValue(reply)
    }

    // MARK: - Main loop

    /// Runs the GLib main loop until SIGTERM, SIGINT or ``quit()``.
    static func runMainLoop() {
        let loop = g_main_loop_new(nil, 0)!
        mainLoop = loop
        let quit: GSourceFunc = { loop in
            g_main_loop_quit(OpaquePointer(loop))
            return 0
        }
        g_unix_signal_add(SIGTERM, quit, UnsafeMutableRawPointer(loop))
        g_unix_signal_add(SIGINT, quit, UnsafeMutableRawPointer(loop))
        takeMainLoopLock()
        g_main_context_set_poll_func(nil, pollLettingGoOfLock)
        g_main_loop_run(loop)
        active?.flush()  // commit what the last calls wrote before the process ends
        active?.flushConnection()
    }

    /// Waits until GDBus has written every reply and signal handed to it, so that the replies
    /// to the last calls committed before a stop reach their callers: the process ends right
    /// after, and a reply still queued would be lost (the caller would get `NoReply` for a
    /// write that was made). Gives up after `timeout` seconds, for a bus that no longer reads.
    func flushConnection(timeout: Double = 2) {
        guard let cancellable = g_cancellable_new() else { return }
        let timer = UInt(bitPattern: g_object_ref(cancellable))  // the timer's own reference
        // A thread of its own, not libdispatch's pool: a pool thread started while systemd stops
        // the unit logged "Failed to set thread priority for worker thread" at every logout.
        let started = DetachedThread.start(named: "secretd-flush") {
            DetachedThread.sleep(seconds: timeout)
            let cancellable = UnsafeMutablePointer<GCancellable>(bitPattern: timer)
            g_cancellable_cancel(cancellable)
            g_object_unref(UnsafeMutableRawPointer(cancellable))
        }
        guard started else {
            g_object_unref(UnsafeMutableRawPointer(UnsafeMutablePointer<GCancellable>(bitPattern: timer)))
            g_object_unref(cancellable)
            return  // no thread for the timer: no waiting without a bound
        }
        g_dbus_connection_flush_sync(connection, cancellable, nil)
        g_object_unref(cancellable)
    }

    nonisolated(unsafe) private static var mainLoop: OpaquePointer?

    /// Held by the main loop's thread except while it waits in poll (see ``MainLoopLock``).
    static let mainLoopLock = MainLoopLock()
    nonisolated(unsafe) private static var holdsMainLoopLock = false

    /// Takes ``mainLoopLock`` for the main loop's thread, once.
    private static func takeMainLoopLock() {
        guard !holdsMainLoopLock else { return }
        mainLoopLock.lock()
        holdsMainLoopLock = true
    }

    /// The main context's poll: lets go of ``mainLoopLock`` while it waits, so GDBus's thread
    /// can answer quick reads then, and takes it again before anything is dispatched.
    private static let pollLettingGoOfLock: GPollFunc = { descriptors, count, timeout in
        mainLoopLock.unlock()
        let ready = g_poll(descriptors, count, timeout)
        mainLoopLock.lock()
        return ready
    }

    /// Runs `body` on the main loop each time the process receives `signal` (such as SIGHUP).
    static func onSignal(_ signal: Int32, _ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(ClosureBox(value: body)).toOpaque()  // lives for the process
        g_unix_signal_add(signal, { data in
            Unmanaged<ClosureBox<() -> Void>>.fromOpaque(data!).takeUnretainedValue().value()
            return 1  // G_SOURCE_CONTINUE
        }, box)
    }

    /// Stops ``runMainLoop()``.
    static func quit() {
        if let mainLoop { g_main_loop_quit(mainLoop) }
    }

    /// Runs `body` once after `seconds` on the main loop.
    static func after(seconds: Double, _ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(ClosureBox<() -> Void>(value: {
            body()
            BusServer.active?.scheduleFlush()
        })).toOpaque()
        g_timeout_add_full(
            G_PRIORITY_DEFAULT, UInt32(max(0, seconds * 1000)),
            { data in
                Unmanaged<ClosureBox<() -> Void>>.fromOpaque(data!).takeUnretainedValue().value()
                return 0
            }, box, { data in Unmanaged<ClosureBox<() -> Void>>.fromOpaque(data!).release() })
    }

    /// Calls `body` on the main loop whenever `fd` is readable, hung up or in error, until
    /// `body` returns false or ``removeWatch(_:)`` is called with the id returned here.
    @discardableResult
    static func watch(fd: Int32, _ body: @escaping () -> Bool) -> UInt32 {
        let box = Unmanaged.passRetained(ClosureBox<() -> Bool>(value: {
            let keep = body()
            BusServer.active?.scheduleFlush()
            return keep
        })).toOpaque()
        let condition = GIOCondition(rawValue: G_IO_IN.rawValue | G_IO_HUP.rawValue | G_IO_ERR.rawValue)
        return g_unix_fd_add_full(
            G_PRIORITY_DEFAULT, fd, condition,
            { _, _, data in Unmanaged<ClosureBox<() -> Bool>>.fromOpaque(data!).takeUnretainedValue().value() ? 1 : 0 },
            box, { data in Unmanaged<ClosureBox<() -> Bool>>.fromOpaque(data!).release() })
    }

    /// Stops a watch of ``watch(fd:_:)``.
    static func removeWatch(_ id: UInt32) {
        g_source_remove(id)
    }

    /// Runs `body` on the main loop and waits for its result; for threads other than the
    /// main loop's (prompt conversations). Never call it from the main loop itself.
    @discardableResult
    static func onMainLoop<T>(_ body: @escaping () -> T) -> T {
        var result: T?
        let call = MainLoopCall {
            result = body()
            BusServer.active?.scheduleFlush()  // a prompt's writes are committed like any call's
        }
        g_idle_add_full(
            G_PRIORITY_DEFAULT,
            { data in
                Unmanaged<MainLoopCall>.fromOpaque(data!).takeUnretainedValue().run()
                return 0
            }, Unmanaged.passRetained(call).toOpaque(), { data in Unmanaged<MainLoopCall>.fromOpaque(data!).release() })
        call.done.wait()
        return result!
    }

    private final class MainLoopCall: @unchecked Sendable {
        let body: () -> Void
        let done = DispatchSemaphore(value: 0)
        init(_ body: @escaping () -> Void) { self.body = body }
        func run() {
            body()
            done.signal()
        }
    }

    private final class ClosureBox<Value> {
        let value: Value
        init(value: Value) { self.value = value }
    }

    // MARK: - Dispatch

    private func methodCall(
        sender: String, path: String, interface: String, method: String, parameters: OpaquePointer,
        invocation: OpaquePointer
    ) {
        returnMemoryLater(after: Self.trimInterval)
        guard let handler else {
            g_dbus_method_invocation_return_dbus_error(invocation, "org.freedesktop.DBus.Error.Failed", "shutting down")
            return
        }
        // A new client: the call waits (the main loop does not) until the bus says who it is.
        let waiting = handler.identify(sender) { [weak self] refusal in
            if let refusal {
                g_dbus_method_invocation_return_dbus_error(invocation, refusal.dbusName, refusal.message)
            } else {
                self?.methodCall(
                    sender: sender, path: path, interface: interface, method: method, parameters: parameters,
                    invocation: invocation)
            }
        }
        if waiting { return }
        guard let arguments = DBusValue.makeValue(parameters)?.tuple else {
            g_dbus_method_invocation_return_dbus_error(
                invocation, "org.freedesktop.DBus.Error.InvalidArgs", "arguments of a type D-Bus does not carry")
            return
        }
        let call = MethodCall(sender: sender, path: path, interface: interface, method: method, arguments: arguments)
        let reply: Held
        let result = interface == Self.propertiesInterface ? properties(call, handler) : handler.handle(call)
        switch result {
        case .success(let value):
            let variant = g_variant_ref_sink(DBusValue.makeVariant(value))
            if g_variant_get_size(variant) > Self.largeReply { returnMemoryLater() }
            reply = Held(send: {
                g_dbus_method_invocation_return_value(invocation, variant)
                g_variant_unref(variant)
            }, fail: {
                g_variant_unref(variant)
                let failure = SecretServiceError.incomplete
                g_dbus_method_invocation_return_dbus_error(invocation, failure.dbusName, failure.message)
            })
        case .failure(let error):
            reply = Held(send: { g_dbus_method_invocation_return_dbus_error(invocation, error.dbusName, error.message) })
        }
        deliver(reply)
    }

    // MARK: - Properties

    /// The standard interface GDBus hands to ``methodCall`` for `Get`, `Set` and `GetAll`,
    /// because the interface vtable has no `get_property` or `set_property`. GDBus still refuses
    /// unknown properties, writes to read-only ones and values of the wrong type itself.
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// `Get`, `Set` and `GetAll` on an object, as the handler reads and writes them. Their
    /// replies wait for pending writes like every other reply, so nothing not yet durable is
    /// shown or acknowledged. `GetAll` on an object that does not exist is the handler's
    /// `NoSuchObject`, where GDBus answered an empty dictionary.
    private func properties(_ call: MethodCall, _ handler: any BusHandler) -> Result<DBusValue, SecretServiceError> {
        let arguments = call.arguments
        switch (call.method, arguments.first) {
        case ("Get", .string(let interface)?):
            guard arguments.count == 2, case .string(let name) = arguments[1] else { break }
            return handler.property(name, interface: interface, path: call.path, sender: call.sender)
                .map { .tuple([.variant($0)]) }
        case ("Set", .string(let interface)?):
            guard arguments.count == 3, case .string(let name) = arguments[1], case .variant(let value) = arguments[2]
            else { break }
            if let failure = handler.setProperty(name, interface: interface, path: call.path, value: value, sender: call.sender) {
                return .failure(failure)
            }
            return .success(.tuple([]))
        case ("GetAll", .string(let interface)?):
            guard arguments.count == 1 else { break }
            var entries: [DBusValue.Entry] = []
            for name in readableProperties(of: interface) {
                switch handler.property(name, interface: interface, path: call.path, sender: call.sender) {
                case .success(let value): entries.append(DBusValue.Entry(key: .string(name), value: .variant(value)))
                case .failure(.noSuchObject(let message)): return .failure(.noSuchObject(message))
                case .failure: continue  // as GDBus did: a property that cannot be read is left out
                }
            }
            return .success(.tuple([.dictionary(key: "s", value: "v", entries)]))
        default: break
        }
        return .failure(.invalidArgs("\(call.method) takes arguments of other types"))
    }

    /// The readable properties of `interface`, from the introspection data.
    private func readableProperties(of interface: String) -> [String] {
        guard let info = g_dbus_node_info_lookup_interface(nodeInfo, interface), var property = info.pointee.properties
        else { return [] }
        var names: [String] = []
        while let current = property.pointee {
            if current.pointee.flags.rawValue & G_DBUS_PROPERTY_INFO_FLAGS_READABLE.rawValue != 0 {
                names.append(String(cString: current.pointee.name))
            }
            property = property.advanced(by: 1)
        }
        return names
    }

    // MARK: - Memory

    /// Replies larger than this (1 MiB: thousands of secrets or paths) leave memory behind.
    static let largeReply = 1 << 20
    /// While calls keep coming, freed memory goes back to the system at most this often (s).
    static let trimInterval = 1.0
    private var trimScheduled = false
    private var usedSinceTrimScheduled = false

    /// Hands freed memory back to the system `seconds` from now, or when the trim already
    /// scheduled runs: 0.2 s after a large reply (or after a client with a backlog of calls
    /// left), and at most once a second while calls come in. A trim that had calls after it
    /// was scheduled is followed by one more, so the last one comes after the memory of the
    /// last call was freed. glibc keeps freed heap otherwise, most of all in the arena of
    /// GDBus's thread: one search of 100,000 items would stay resident, and 30,000 deletes
    /// left 10 MB there.
    func returnMemoryLater(after seconds: Double = 0.2) {
        guard !trimScheduled else {
            usedSinceTrimScheduled = true
            return
        }
        trimScheduled = true
        usedSinceTrimScheduled = false
        BusServer.after(seconds: seconds) { [weak self] in
            guard let self else { return }
            trimScheduled = false
            _ = keychain_release_free_memory()
            if usedSinceTrimScheduled { returnMemoryLater(after: Self.trimInterval) }
        }
    }

    // MARK: - Group commit

    /// A reply or signal waiting for the writes before it to be committed.
    private struct Held {
        /// Sends it.
        var send: () -> Void
        /// What to do instead when the commit failed (a method reply becomes an error).
        var fail: (() -> Void)?
    }

    private var held: [Held] = []
    /// The last invalidation-only PropertiesChanged broadcast among ``held``, which
    /// ``emitPropertiesChanged`` does not repeat.
    private var lastHeldInvalidation: (path: String, interface: String, names: [String])?
    /// Whether replies or signals are waiting for a commit.
    var isHoldingReplies: Bool { !held.isEmpty }
    private var flushScheduled = false
    /// How many replies and signals may wait for one commit before it is forced.
    private static let maximumHeld = 256

    /// Sends `item` now, or after the commit of the writes before it: nothing is acknowledged
    /// (nor announced) before it is durable, and writes that arrive together share one commit.
    /// Returns whether `item` is waiting.
    @discardableResult
    private func deliver(_ item: Held) -> Bool {
        guard handler?.hasPendingCommit == true || !held.isEmpty else {
            item.send()
            return false
        }
        held.append(item)
        if held.count >= Self.maximumHeld {
            flush()
            return false
        }
        scheduleFlush()
        return true
    }

    /// Commits after the calls already queued on the main loop have been handled.
    func scheduleFlush() {
        guard !flushScheduled, handler?.hasPendingCommit == true || !held.isEmpty else { return }
        flushScheduled = true
        let box = Unmanaged.passRetained(ClosureBox<() -> Void>(value: { [weak self] in self?.flush() })).toOpaque()
        g_idle_add_full(
            G_PRIORITY_DEFAULT_IDLE,
            { data in
                Unmanaged<ClosureBox<() -> Void>>.fromOpaque(data!).takeUnretainedValue().value()
                return 0
            }, box, { data in Unmanaged<ClosureBox<() -> Void>>.fromOpaque(data!).release() })
    }

    /// Commits the pending writes, then sends what waited for them, in order.
    func flush() {
        flushScheduled = false
        let committed = handler?.commitPending() ?? true
        let waiting = held
        held = []
        lastHeldInvalidation = nil
        for item in waiting {
            if committed { item.send() } else { item.fail?() }
        }
    }

    /// The server of this process, for main-loop hops that may write.
    nonisolated(unsafe) private(set) static weak var active: BusServer?

    nonisolated(unsafe) private static let interfaceVTable: UnsafeMutablePointer<GDBusInterfaceVTable> = {
        let table = UnsafeMutablePointer<GDBusInterfaceVTable>.allocate(capacity: 1)  // lives for the process
        table.initialize(to: GDBusInterfaceVTable(
            method_call: { _, sender, path, interface, method, parameters, invocation, userData in
                Unmanaged<BusServer>.fromOpaque(userData!).takeUnretainedValue().methodCall(
                    sender: sender.map { String(cString: $0) } ?? "", path: String(cString: path!),
                    interface: String(cString: interface!), method: String(cString: method!), parameters: parameters!,
                    invocation: invocation!)
            },
            // No get_property or set_property: GDBus then sends Get, Set and GetAll to
            // method_call (see ``properties(_:_:)``).
            get_property: nil,
            set_property: nil,
            padding: (nil, nil, nil, nil, nil, nil, nil, nil)))
        return table
    }()

    nonisolated(unsafe) private static let subtreeVTable: UnsafeMutablePointer<GDBusSubtreeVTable> = {
        let table = UnsafeMutablePointer<GDBusSubtreeVTable>.allocate(capacity: 1)  // lives for the process
        table.initialize(to: GDBusSubtreeVTable(
            enumerate: { _, sender, path, userData in
                let server = Unmanaged<BusServer>.fromOpaque(userData!).takeUnretainedValue()
                let names = server.handler?.children(
                    of: String(cString: path!), sender: sender.map { String(cString: $0) } ?? "") ?? []
                let array = g_malloc0(gsize((names.count + 1) * MemoryLayout<UnsafeMutablePointer<gchar>?>.stride))!
                    .assumingMemoryBound(to: UnsafeMutablePointer<gchar>?.self)
                for (index, name) in names.enumerated() { array[index] = g_strdup(name) }
                return array  // transfer full: GDBus frees it
            },
            introspect: { _, _, path, node, userData in
                let server = Unmanaged<BusServer>.fromOpaque(userData!).takeUnretainedValue()
                let full = BusServer.join(String(cString: path!), node)
                let infos = (server.handler?.interfaces(at: full) ?? []).compactMap {
                    g_dbus_node_info_lookup_interface(server.nodeInfo, $0)
                }
                let array = g_malloc0(gsize((infos.count + 1) * MemoryLayout<UnsafeMutablePointer<GDBusInterfaceInfo>?>.stride))!
                    .assumingMemoryBound(to: UnsafeMutablePointer<GDBusInterfaceInfo>?.self)
                for (index, info) in infos.enumerated() { array[index] = g_dbus_interface_info_ref(info) }
                return array  // transfer full: GDBus unrefs the infos and frees the array
            },
            dispatch: { _, _, path, interface, node, outUserData, userData in
                let server = Unmanaged<BusServer>.fromOpaque(userData!).takeUnretainedValue()
                let full = BusServer.join(String(cString: path!), node)
                guard let interface, server.handler?.interfaces(at: full).contains(String(cString: interface)) == true
                else { return nil }
                outUserData?.pointee = userData
                return UnsafePointer(BusServer.interfaceVTable)
            },
            padding: (nil, nil, nil, nil, nil, nil, nil, nil)))
        return table
    }()

    /// The full path of a subtree node. GLib 2.74 passes the requested object path (which
    /// already ends with the node) rather than the subtree's path, as its docs say; accept both.
    private static func join(_ path: String, _ node: UnsafePointer<gchar>?) -> String {
        guard let node else { return path }
        let name = String(cString: node)
        return path.hasSuffix("/" + name) ? path : path + "/" + name
    }

    // MARK: - Errors of property calls

    /// Makes secretd's own error names known to GDBus, so the GError of a failed property read
    /// or write goes out under its name (`org.freedesktop.Secret.Error.NoSuchObject`) rather
    /// than as `org.gtk.GDBus.UnmappedGError…`. The `org.freedesktop.DBus.Error` names keep
    /// GLib's own mapping (its G_DBUS_ERROR domain, registered first).
    private static func registerErrorNames() {
        _ = g_dbus_error_quark()
        let domain = g_quark_from_static_string("secretd-error-quark")
        for (code, name) in SecretServiceError.dbusNames.enumerated() where !name.hasPrefix("org.freedesktop.DBus.Error.") {
            _ = g_dbus_error_register_error(domain, gint(code + 1), name)
        }
    }

    static func take(_ error: UnsafeMutablePointer<GError>?) -> String {
        guard let error else { return "unknown error" }
        defer { g_error_free(error) }
        return error.pointee.message.map { String(cString: $0) } ?? ""
    }
}

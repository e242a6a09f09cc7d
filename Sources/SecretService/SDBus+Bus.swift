// Talking to the bus daemon itself: owning secretd's name, asking who a client is, and hearing
// when clients leave.

internal import CSystemd
import Glibc
import DBusValues
import KeychainCore

extension BusServer {
    private static let busDaemon = "org.freedesktop.DBus"
    private static let busDaemonPath = "/org/freedesktop/DBus"

    // MARK: - Bus name

    /// Asks for `name` without queueing; `acquired` or `lost` runs from the main loop. With
    /// `replace`, takes the name from an owner that allows replacement; secretd allows it too.
    /// `lost` also runs when another provider takes the name later.
    func ownName(_ name: String, replace: Bool, acquired: @escaping () -> Void, lost: @escaping (String) -> Void) {
        ownership = (name, acquired, lost)
        let userData = Unmanaged.passUnretained(self).toOpaque()
        sd_bus_match_signal(bus, nil, Self.busDaemon, Self.busDaemonPath, Self.busDaemon, "NameLost", { message, userData, _ in
            guard let message, let userData, case .string(let name)? = SDBusValues.readAll(message)?.first else { return 0 }
            let server = Unmanaged<BusServer>.fromOpaque(userData).takeUnretainedValue()
            if name == server.ownership?.name { server.ownership?.lost(name) }
            return 0
        }, userData)
        var flags = UInt64(SD_BUS_NAME_ALLOW_REPLACEMENT)
        if replace { flags |= UInt64(SD_BUS_NAME_REPLACE_EXISTING) }
        let asked = sd_bus_request_name_async(bus, nil, name, flags, { reply, userData, _ in
            guard let reply, let userData else { return 0 }
            let server = Unmanaged<BusServer>.fromOpaque(userData).takeUnretainedValue()
            guard let ownership = server.ownership else { return 0 }
            // 1: now the primary owner; 4: already it. 2 (queued) cannot happen without
            // queueing; 3: another connection owns it.
            if sd_bus_message_is_method_error(reply, nil) == 0, case .uint32(let result)? = SDBusValues.readAll(reply)?.first,
                result == 1 || result == 4
            {
                ownership.acquired()
            } else {
                ownership.lost(ownership.name)
            }
            MainLoop.afterEachCallback?()
            return 1
        }, userData)
        if asked < 0 { MainLoop.after(seconds: 0) { lost(name) } }
    }

    /// The unique name and process id of the current owner of `name`, if any.
    func owner(of name: String) -> (uniqueName: String, pid: UInt32?)? {
        guard let unique = callBus("GetNameOwner", [.string(name)])?.first?.string else { return nil }
        if case .uint32(let pid)? = callBus("GetConnectionUnixProcessID", [.string(unique)])?.first {
            return (unique, pid)
        }
        return (unique, nil)
    }

    /// Whether `name` (a client's unique name) is still on the bus.
    func hasOwner(_ name: String) -> Bool {
        callBus("NameHasOwner", [.string(name)])?.first?.boolean ?? false
    }

    // MARK: - Who a client is

    /// The uid and process id the bus daemon recorded for the connection `sender`
    /// (`GetConnectionCredentials`); nil when it is gone or the bus does not know. Waits for
    /// the bus's answer; method calls use ``credentials(of:completion:)``.
    func credentials(of sender: String) -> (uid: UInt32, pid: UInt32?)? {
        Self.credentials(in: callBus("GetConnectionCredentials", [.string(sender)], timeout: 30))
    }

    /// ``credentials(of:)`` without waiting: `completion` runs on the main loop with the answer.
    func credentials(of sender: String, completion: @escaping ((uid: UInt32, pid: UInt32?)?) -> Void) {
        guard let call = busCall("GetConnectionCredentials", [.string(sender)]) else {
            MainLoop.after(seconds: 0) { completion(nil) }
            return
        }
        defer { sd_bus_message_unref(call) }
        let box = Unmanaged.passRetained(MainLoop.Box(completion)).toOpaque()
        let sent = sd_bus_call_async(bus, nil, call, { reply, userData, _ in
            let completion = Unmanaged<MainLoop.Box<((uid: UInt32, pid: UInt32?)?) -> Void>>.fromOpaque(userData!)
                .takeRetainedValue().value
            let values = reply.flatMap { sd_bus_message_is_method_error($0, nil) == 0 ? SDBusValues.readAll($0) : nil }
            completion(BusServer.credentials(in: values))
            MainLoop.afterEachCallback?()
            return 1
        }, box, 0)
        if sent < 0 {
            Unmanaged<MainLoop.Box<((uid: UInt32, pid: UInt32?)?) -> Void>>.fromOpaque(box).release()
            MainLoop.after(seconds: 0) { completion(nil) }
        }
    }

    /// The uid and pid in a `GetConnectionCredentials` reply.
    private static func credentials(in reply: [DBusValue]?) -> (uid: UInt32, pid: UInt32?)? {
        guard case .dictionary(_, _, let entries)? = reply?.first else { return nil }
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

    // MARK: - Clients leaving

    /// Calls `handler` with the unique name of every client that disconnects from the bus.
    func watchDisconnects(_ handler: @escaping (String) -> Void) {
        disconnectHandler = handler
        sd_bus_match_signal(bus, nil, Self.busDaemon, Self.busDaemonPath, Self.busDaemon, "NameOwnerChanged", { message, userData, _ in
            guard let message, let userData, let fields = SDBusValues.readAll(message), fields.count == 3,
                let name = fields[0].string, let newOwner = fields[2].string, newOwner.isEmpty, name.hasPrefix(":")
            else { return 0 }
            let server = Unmanaged<BusServer>.fromOpaque(userData).takeUnretainedValue()
            guard !server.stopping else { return 0 }  // the stop's wait for the bus: nothing more is done
            // Its queued calls are dropped, and its calls still waiting answered (to nobody).
            server.dropQueuedCalls(of: name)
            if server.quota.forget(name) { server.memory.trimLater(after: 2) }
            server.disconnectHandler?(name)
            MainLoop.afterEachCallback?()
            return 0
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    // MARK: - Calls to the bus daemon

    /// A method call to the bus daemon with `arguments`.
    private func busCall(_ method: String, _ arguments: [DBusValue]) -> OpaquePointer? {
        var call: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &call, Self.busDaemon, Self.busDaemonPath, Self.busDaemon, method) >= 0,
            let call
        else { return nil }
        guard SDBusValues.append(arguments, to: call) else {
            sd_bus_message_unref(call)
            return nil
        }
        return call
    }

    // MARK: - Stop

    /// How long the stop waits for the bus while it reads nothing more of what secretd wrote,
    /// and how long in all (systemd kills a unit that has not stopped in 90 s).
    static let flushStall = 10.0
    static let flushLimit = 60.0

    /// Waits, at stop, until the bus daemon holds every reply and signal sent so far, so that
    /// the replies to the last calls committed before the stop reach their callers once the
    /// process is gone: it answers a call of its own (GetId) only after it has read and routed
    /// every message sent before it on this connection, and sd-bus writes the call after them.
    ///
    /// Exiting earlier loses them: a process that exits with calls it has not read leaves its
    /// socket reset, and dbus-daemon, when it next tries to route a call to it, sees the reset
    /// (POLLERR) and drops the connection without reading what is still in the socket; the
    /// callers of the replies in there get NoReply for writes that were stored.
    ///
    /// The calls still coming meanwhile are read and dropped (``received(_:)``: their callers
    /// get NoReply once secretd is gone; nothing of theirs was written). Waits as long as the
    /// bus keeps reading what secretd wrote; gives up after `stall` seconds in which it read
    /// nothing (a bus that no longer reads) or `limit` seconds in all, saying what it had not
    /// read. Either way the bus may then send nothing more, and what it sent is read away
    /// (``stopReading()``), so that the socket closes cleanly and a bus that reads again later
    /// still finds the replies left in it.
    func flushConnection(stall: Double = flushStall, limit: Double = flushLimit) {
        // A bus that is gone takes nothing more (connectionLost said so); nobody can be told.
        guard sd_bus_is_open(bus) > 0 else { return }
        let start = MonotonicClock.seconds
        let outcome = confirmWritten(stall: stall, limit: limit)
        stopReading()
        if Self.unsent > 0 { Log.error("\(Self.unsent) replies or signals could not be sent (see above)") }
        switch outcome {
        case .confirmed:
            let seconds = MonotonicClock.seconds - start
            if seconds >= 1 { Log.info("the bus took \(Int(seconds)) s to confirm the last replies") }
        case .stalled(let messages, let bytes), .tooLong(let messages, let bytes):
            let why = if case .stalled = outcome { "read nothing for \(Int(stall)) s" } else { "still reading after \(Int(limit)) s" }
            Log.error(
                "the bus \(why); exiting with \(messages) messages not yet written to it (the callers of the replies "
                    + "among them get NoReply, for writes that are stored) and \(bytes) bytes it has not read (left for it "
                    + "in the socket)")
        case .failed(let reason):
            Log.error("cannot confirm that the bus holds the last replies: \(reason); their callers may get NoReply (their writes are stored)")
        }
    }

    /// How the wait for the bus at stop ended.
    private enum FlushOutcome {
        /// The bus answered the GetId sent after the last replies.
        case confirmed
        /// It read nothing for the stall time, or was still reading at the limit: what
        /// secretd's queue and socket still held.
        case stalled(messages: UInt64, bytes: Int)
        case tooLong(messages: UInt64, bytes: Int)
        /// The connection failed, or GetId could not be sent or was refused.
        case failed(String)
    }

    /// Sends GetId after everything queued and runs the connection (writing, reading and
    /// dropping calls) until its answer comes, or the bus stalls or takes too long.
    private func confirmWritten(stall: Double, limit: Double) -> FlushOutcome {
        final class Answer { var value: Int32 = 0 }  // 1: GetId answered; -1: an error instead
        guard let call = busCall("GetId", []) else { return .failed("cannot make the call GetId") }
        defer { sd_bus_message_unref(call) }
        let answer = Answer()
        return withExtendedLifetime(answer) {
            var slot: OpaquePointer?
            let sent = sd_bus_call_async(bus, &slot, call, { reply, userData, _ in
                let answer = Unmanaged<Answer>.fromOpaque(userData!).takeUnretainedValue()
                answer.value = reply.map { sd_bus_message_is_method_error($0, nil) == 0 } == true ? 1 : -1
                return 1
            }, Unmanaged.passUnretained(answer).toOpaque(), UInt64((limit + 5) * 1_000_000))
            guard sent >= 0 else { return .failed("cannot send GetId: \(String(cString: strerror(-sent)))") }
            defer { sd_bus_slot_unref(slot) }  // no callback after this returns
            let start = MonotonicClock.seconds
            var lastProgress = start
            var last = pendingOutput()
            while answer.value == 0 {
                let processed = sd_bus_process(bus, nil)
                if processed < 0, sd_bus_is_open(bus) <= 0 {
                    return .failed("the connection to the bus failed: \(String(cString: strerror(-processed)))")
                }
                guard answer.value == 0 else { break }
                // Progress: the bus read some of what was in the socket, or a queued message
                // went into it (there was room because the bus read).
                let now = MonotonicClock.seconds
                let pending = pendingOutput()
                if pending.bytes < last.bytes || pending.messages < last.messages { lastProgress = now }
                last = pending
                if now - lastProgress >= stall { return .stalled(messages: pending.messages, bytes: pending.bytes) }
                if now - start >= limit { return .tooLong(messages: pending.messages, bytes: pending.bytes) }
                if processed <= 0 { sd_bus_wait(bus, 50_000) }  // nothing to do now, or a message sd-bus could not handle
            }
            return answer.value > 0 ? .confirmed : .failed("the bus answered GetId with an error")
        }
    }

    /// Lets the bus send secretd nothing more, and reads away (unseen) what it sent that
    /// secretd has not read, so that the exit closes the socket with nothing unread: a socket
    /// closed with data unread is reset, and dbus-daemon drops a reset connection without
    /// reading the rest of it, so this keeps the replies that a wait that gave up leaves in
    /// the socket. After `shutdown(SHUT_RD)` the bus's writes fail with EPIPE, which dbus-daemon
    /// takes for a peer that closed and may still have data to read; nothing more can arrive.
    private func stopReading() {
        let descriptor = sd_bus_get_fd(bus)
        guard descriptor >= 0, shutdown(descriptor, Int32(SHUT_RD)) == 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        buffer.withUnsafeMutableBytes { bytes in
            while true {
                let got = recv(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT))
                if got > 0 || (got < 0 && errno == EINTR) { continue }
                break  // 0: all read; the descriptors calls carried are closed by the kernel
            }
            explicit_bzero(bytes.baseAddress!, bytes.count)  // the calls read may hold secrets
        }
    }

    /// What the bus has yet to take: messages in sd-bus's write queue, and bytes written to
    /// the socket that it has not read (`SIOCOUTQ`, linux/sockios.h: `TIOCOUTQ`, 0x5411).
    private func pendingOutput() -> (messages: UInt64, bytes: Int) {
        var messages: UInt64 = 0
        if sd_bus_get_n_queued_write(bus, &messages) < 0 { messages = 0 }
        var bytes: Int32 = 0
        if ioctl(sd_bus_get_fd(bus), 0x5411, &bytes) < 0 { bytes = 0 }
        return (messages, Int(bytes))
    }


    /// Calls the bus daemon and waits at most `timeout` seconds; the reply's values, or nil.
    private func callBus(_ method: String, _ arguments: [DBusValue], timeout: Double = 5) -> [DBusValue]? {
        guard let call = busCall(method, arguments) else { return nil }
        defer { sd_bus_message_unref(call) }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        guard sd_bus_call(bus, call, UInt64(timeout * 1_000_000), &error, &reply) >= 0, let reply else { return nil }
        defer { sd_bus_message_unref(reply) }
        return SDBusValues.readAll(reply)
    }
}

// What secretd hears from systemd-logind on the system bus: the machine about to sleep
// (`PrepareForSleep(true)`) and one of this user's sessions asked to lock its screen (`Lock`,
// as `loginctl lock-session` and desktops send it). A connection of its own to the system bus,
// driven from the main loop by a watch on its socket; the match rules name logind's bus name,
// so the bus daemon delivers only what logind itself sent.

internal import CSystemd
import DBusValues
import FoundationEssentials
import Glibc

/// secretd's connection to systemd-logind's signals.
final class LogindSignals {
    /// What logind announced.
    enum Event: Equatable {
        /// The machine is about to suspend or hibernate.
        case sleep
        /// One of this user's sessions is to lock its screen.
        case screenLock
    }

    /// The connection (`sd_bus *`).
    private let bus: OpaquePointer
    private let handler: (Event) -> Void
    private var watch: UInt32 = 0
    private static let logind = "org.freedesktop.login1"

    /// Connects to the system bus and listens for `events`; nil (logged) when there is no system
    /// bus or no logind, where nothing would announce them.
    init?(listeningFor events: Set<Event>, handler: @escaping (Event) -> Void) {
        var connection: OpaquePointer?
        let opened = sd_bus_open_system(&connection)
        guard opened >= 0, let connection else {
            Log.warning("cannot connect to the system bus (\(String(cString: strerror(-opened)))); keyrings do not lock on suspend or screen lock")
            return nil
        }
        bus = connection
        self.handler = handler
        sd_bus_set_description(bus, "secretd-logind")
        let me = Unmanaged.passUnretained(self).toOpaque()
        if events.contains(.sleep) {
            sd_bus_match_signal(bus, nil, Self.logind, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep", { message, userData, _ in
                guard let message, let userData, case .boolean(true)? = SDBusValues.readAll(message)?.first else { return 0 }
                Unmanaged<LogindSignals>.fromOpaque(userData).takeUnretainedValue().handler(.sleep)
                return 0
            }, me)
        }
        if events.contains(.screenLock) {
            sd_bus_match_signal(bus, nil, Self.logind, nil, "org.freedesktop.login1.Session", "Lock", { message, userData, _ in
                guard let message, let userData, let path = sd_bus_message_get_path(message) else { return 0 }
                let signals = Unmanaged<LogindSignals>.fromOpaque(userData).takeUnretainedValue()
                if signals.sessionIsMine(String(cString: path)) { signals.handler(.screenLock) }
                return 0
            }, me)
        }
        watch = MainLoop.watch(fd: sd_bus_get_fd(bus)) { [weak self] in self?.process() ?? false }
        process()
    }

    deinit {
        if watch != 0 { MainLoop.removeWatch(watch) }
        sd_bus_flush_close_unref(bus)
    }

    /// Reads and dispatches what arrived; false once the system bus is gone.
    @discardableResult
    private func process() -> Bool {
        while true {
            let result = sd_bus_process(bus, nil)
            if result < 0 {
                Log.warning("lost the system bus (\(String(cString: strerror(-result)))); keyrings no longer lock on suspend or screen lock")
                watch = 0
                return false
            }
            if result == 0 { return true }
        }
    }

    /// Whether the session at `path` is this user's (its `User` property, asked of logind,
    /// which answers at once; at most 2 s).
    private func sessionIsMine(_ path: String) -> Bool {
        var call: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &call, Self.logind, path, "org.freedesktop.DBus.Properties", "Get") >= 0,
            let call
        else { return false }
        defer { sd_bus_message_unref(call) }
        guard SDBusValues.append([.string("org.freedesktop.login1.Session"), .string("User")], to: call) else { return false }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        guard sd_bus_call(bus, call, 2_000_000, &error, &reply) >= 0, let reply else { return false }
        defer { sd_bus_message_unref(reply) }
        guard case .variant(let user)? = SDBusValues.readAll(reply)?.first, case .tuple(let fields) = user,
            case .uint32(let uid)? = fields.first
        else { return false }
        return uid == getuid()
    }
}

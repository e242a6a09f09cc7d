// Records the signals a provider emits, for tests. Uses its own GMainContext, which the test
// pumps while it waits, so no main loop has to run.

internal import CGio
import DBusValues
import Foundation
import KeychainCore

/// Collects every signal sent by `org.freedesktop.secrets` on a bus, broadcast or sent to the
/// connection it listens on.
///
/// secretd sends signals about items only to the clients that have called it, read a
/// collection's or an item's properties, and may see the item: a recorder of its own
/// connection (``init(address:)``) that never calls secretd hears only about collections; one
/// on a connection that calls (``init(listeningOn:)``, which reads the default collection's
/// properties as libsecret's collection objects do) hears about the items that connection may
/// see.
public final class SignalRecorder: @unchecked Sendable {
    /// One received signal; `arguments` is in GVariant text format.
    public struct Signal: Sendable, CustomStringConvertible {
        /// The object that sent it.
        public var path: String
        /// Its interface.
        public var interface: String
        /// Its name.
        public var name: String
        /// Its arguments, printed.
        public var arguments: String

        /// `interface.name path arguments`.
        public var description: String { "\(interface).\(name) \(path) \(arguments)" }
    }

    private let connection: OpaquePointer
    private let context: OpaquePointer
    private var subscription: UInt32 = 0
    /// The test's connection it listens on, which it keeps open; nil: a connection of its own.
    private let borrowed: BusConnection?
    /// The signals received so far.
    public private(set) var signals: [Signal] = []

    /// Starts recording on a new connection to the bus at `address`.
    public init(address: String) throws(BusError) {
        var error: UnsafeMutablePointer<GError>?
        let flags = GDBusConnectionFlags(
            rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        let context = g_main_context_new()!
        self.context = context
        guard let connection = g_dbus_connection_new_for_address_sync(address, flags, nil, nil, &error) else {
            g_main_context_unref(context)
            throw BusError(description: error.map { String(cString: $0.pointee.message) } ?? "cannot connect")
        }
        self.connection = connection
        borrowed = nil
        subscribe()
    }

    /// Starts recording what reaches `bus`, a connection the test makes its calls on, after
    /// reading the default collection's properties on it (a provider without one answers an
    /// error, which does not matter).
    public init(listeningOn bus: BusConnection) {
        context = g_main_context_new()!
        connection = bus.connection
        borrowed = bus
        subscribe()
        _ = try? bus.call(
            SecretServiceNames.Path.alias("default"), SecretServiceNames.Interface.properties, "GetAll",
            "('\(SecretServiceNames.Interface.collection)',)")
    }

    private func subscribe() {
        // Signal callbacks run in the thread-default context at subscription time: ours.
        g_main_context_push_thread_default(context)
        defer { g_main_context_pop_thread_default(context) }
        subscription = g_dbus_connection_signal_subscribe(
            connection, SecretServiceNames.busName, nil, nil, nil, nil, G_DBUS_SIGNAL_FLAGS_NONE,
            { _, _, path, interface, name, parameters, userData in
                let recorder = Unmanaged<SignalRecorder>.fromOpaque(userData!).takeUnretainedValue()
                recorder.signals.append(Signal(
                    path: String(cString: path!), interface: String(cString: interface!), name: String(cString: name!),
                    arguments: DBusValue.text(of: parameters!)))
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    deinit {
        g_dbus_connection_signal_unsubscribe(connection, subscription)
        if borrowed == nil {
            g_dbus_connection_close_sync(connection, nil, nil)
            g_object_unref(UnsafeMutableRawPointer(connection))
        }
        while g_main_context_iteration(context, 0) != 0 {}
        g_main_context_unref(context)
    }

    /// Waits (up to `timeout` seconds) until a signal called `name` from `path` whose arguments
    /// (in GVariant text) contain `text` arrived; returns the first, or nil.
    @discardableResult
    public func wait(for name: String, path: String? = nil, containing text: String = "", timeout: Double = 20) -> Signal? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            while g_main_context_iteration(context, 0) != 0 {}
            if let found = signals.first(where: {
                $0.name == name && (path == nil || $0.path == path) && (text.isEmpty || $0.arguments.contains(text))
            }) { return found }
            usleep(10_000)
        } while Date() < deadline
        return nil
    }

    /// Forgets the signals received so far, including those GDBus has read but not yet handed
    /// to this recorder (a call's reply can be back before the signals sent ahead of it are).
    public func clear() {
        while g_main_context_iteration(context, 0) != 0 {}
        signals.removeAll()
    }
}

internal import CGio
internal import CLibSecret  // GError and the other GLib structs come through it too (both modules include glib.h)
import Foundation

/// The round-trip floor of `make bench`: a trivial D-Bus service on the same private bus as
/// the provider under test, answering a method that does nothing. Measuring the floor against
/// it, and not against the provider's own `Peer.Ping`, keeps a slow provider from raising its
/// own floor (issue 20). bench/run.sh starts it next to every provider, in every round.
enum FloorService {
    static let busName = "org.keychain.BenchFloor"
    static let path = "/org/keychain/BenchFloor"
    static let interface = "org.keychain.BenchFloor"
    /// Takes nothing, returns nothing, does nothing.
    static let method = "Noop"

    /// Owns ``busName`` on the session bus and answers ``method`` from a registered object,
    /// on the GLib main loop, as every GDBus service answers (GDBus's thread hands each call to
    /// the main thread); serves until killed. GDBus answers `Peer.Ping` itself, in its thread.
    static func serve() -> Never {
        var error: UnsafeMutablePointer<GError>?
        guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error) else { fail("no session bus") }
        guard let info = g_dbus_node_info_new_for_xml(introspection, &error),
            g_dbus_connection_register_object(
                connection, path, g_dbus_node_info_lookup_interface(info, interface), vtable, nil, nil, &error) != 0
        else { fail("cannot export \(path)") }
        g_bus_own_name_on_connection(connection, busName, G_BUS_NAME_OWNER_FLAGS_NONE, nil, nil, nil, nil)
        g_main_loop_run(g_main_loop_new(nil, 0))
        fail("main loop ended")
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("keychain-bench --serve-floor: \(message)\n".utf8))
        exit(1)
    }

    private static let introspection = """
        <node><interface name="\(interface)"><method name="\(method)"/></interface></node>
        """

    nonisolated(unsafe) private static let vtable: UnsafeMutablePointer<GDBusInterfaceVTable> = {
        let table = UnsafeMutablePointer<GDBusInterfaceVTable>.allocate(capacity: 1)
        table.initialize(to: GDBusInterfaceVTable(
            method_call: { _, _, _, _, _, _, invocation, _ in
                g_dbus_method_invocation_return_value(invocation, nil)  // takes the invocation
            },
            get_property: nil,
            set_property: nil,
            padding: (nil, nil, nil, nil, nil, nil, nil, nil)))
        return table
    }()
}

/// Calls to ``FloorService``, and the provider's own cheapest calls, over the session
/// connection libsecret uses (GIO's shared `g_bus_get_sync` singleton), one at a time, as the
/// bench's libsecret calls are made.
struct FloorClient {
    /// Not sendable, but only ever used from the bench's one thread.
    nonisolated(unsafe) private static var shared: OpaquePointer?

    private var connection: OpaquePointer {
        get throws {
            if let connection = Self.shared { return connection }
            var error: UnsafeMutablePointer<GError>?
            guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error) else {  // transfer full, kept
                defer { g_error_free(error) }
                throw BenchError("no session bus: \(error.map { String(cString: $0.pointee.message) } ?? "?")")
            }
            Self.shared = connection
            return connection
        }
    }

    /// One call of the no-op method (`ping: false`) or of GDBus's own `Peer.Ping` on the
    /// floor service (`ping: true`, answered in GDBus's thread, without the main loop).
    func call(ping: Bool = false) throws {
        try call(
            FloorService.busName, FloorService.path, ping ? "org.freedesktop.DBus.Peer" : FloorService.interface,
            ping ? "Ping" : FloorService.method, nil, who: "the floor service")
    }

    /// The provider's own cheapest calls, for the floors of its CPU per call: `Peer.Ping`
    /// (`ping: true`; the bus library answers it without the provider's code) or the Secret
    /// Service method that does the least, `ReadAlias("default")`, answered through the
    /// provider's own dispatch like every other method.
    func callProvider(ping: Bool) throws {
        let service = "/org/freedesktop/secrets"
        if ping {
            try call("org.freedesktop.secrets", service, "org.freedesktop.DBus.Peer", "Ping", nil, who: "the provider")
        } else {
            var alias: OpaquePointer? = g_variant_new_string("default")
            try call(
                "org.freedesktop.secrets", service, "org.freedesktop.Secret.Service", "ReadAlias",
                g_variant_new_tuple(&alias, 1), who: "the provider")
        }
    }

    /// One call on the shared connection; `arguments` is floating (the call takes it).
    private func call(
        _ destination: String, _ path: String, _ interface: String, _ method: String, _ arguments: OpaquePointer?,
        who: String
    ) throws {
        var error: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_sync(
            try connection, destination, path, interface, method, arguments, nil, G_DBUS_CALL_FLAGS_NONE, -1, nil, &error)  // transfer full
        if let reply { g_variant_unref(reply) }
        if let error {
            defer { g_error_free(error) }
            throw BenchError("\(who) did not answer: \(String(cString: error.pointee.message))")
        }
    }

    /// `count` timed calls.
    func samples(_ count: Int, ping: Bool = false) throws -> Samples {
        var samples = Samples()
        for _ in 0..<count { try samples.time { try call(ping: ping) } }
        return samples
    }
}

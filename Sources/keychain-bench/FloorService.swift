internal import CGio
internal import CLibSecret  // GError and the other GLib structs come through it too (both modules include glib.h)
internal import CSystemd
import Foundation
import Glibc

/// The round-trip floor of `make bench`: a trivial D-Bus service on the same private bus as
/// the provider under test, answering a method that does nothing. Measuring the floor against
/// it, and not against the provider's own `Peer.Ping`, keeps a slow provider from raising its
/// own floor (issue 20). bench/run.sh starts it next to every provider, in every round.
///
/// It answers through sd-bus (libsystemd), the bus library secretd serves with, on one thread
/// as secretd does: the floor is what the cheapest server costs, so no provider is measured
/// against a floor raised by its own library (until issue 46 it was a GDBus service, whose
/// worker thread hands each call to the main thread and back; bench/README.md has both floors).
enum FloorService {
    static let busName = "org.keychain.BenchFloor"
    static let path = "/org/keychain/BenchFloor"
    static let interface = "org.keychain.BenchFloor"
    /// Takes nothing, returns nothing, does nothing.
    static let method = "Noop"

    /// Owns ``busName`` on the session bus and answers ``method`` at ``path`` from sd-bus's
    /// dispatch on this thread; serves until killed. sd-bus answers `Peer.Ping` itself, in the
    /// same dispatch.
    static func serve() -> Never {
        var connection: OpaquePointer?
        guard sd_bus_open_user(&connection) >= 0, let bus = connection else { fail("no session bus") }
        let exported = sd_bus_add_object(bus, nil, path, { message, _, _ in
            guard let message, sd_bus_message_is_method_call(message, FloorService.interface, FloorService.method) > 0 else { return 0 }
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return -ENOMEM }
            sd_bus_send(nil, reply, nil)
            sd_bus_message_unref(reply)
            return 1
        }, nil)
        guard exported >= 0 else { fail("cannot export \(path): \(String(cString: strerror(-exported)))") }
        let owned = sd_bus_request_name(bus, busName, 0)
        guard owned >= 0 else { fail("cannot own \(busName): \(String(cString: strerror(-owned)))") }
        while true {
            let processed = sd_bus_process(bus, nil)
            guard processed >= 0 else { fail("the bus failed: \(String(cString: strerror(-processed)))") }
            if processed == 0, sd_bus_wait(bus, UInt64.max) < 0 { fail("cannot wait for the bus") }
        }
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("keychain-bench --serve-floor: \(message)\n".utf8))
        exit(1)
    }
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

    /// One call of the no-op method (`ping: false`) or of sd-bus's own `Peer.Ping` on the
    /// floor service (`ping: true`, answered by the bus library without the service's code).
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

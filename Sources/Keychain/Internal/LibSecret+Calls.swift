// D-Bus calls the library makes beside libsecret's API, on libsecret's own connection:
// properties without an item proxy, gnome-keyring's extension, secretd's access groups. The
// arguments and replies are DBusValues, built and read by the one bridge to GVariant.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// The GDBus connection libsecret's service proxy uses.
    static func connection(of service: UnsafeMutablePointer<SecretService>) -> OpaquePointer? {
        g_dbus_proxy_get_connection(UnsafeMutableRawPointer(service).assumingMemoryBound(to: GDBusProxy.self))
    }

    /// Calls `method` of `interface` at `path` of the provider (or of `destination`) and returns
    /// the reply's values.
    ///
    /// - Parameters:
    ///   - arguments: the call's arguments, followed by `encoded`: floating GVariants libsecret
    ///     made (secrets encoded for its session), taken over by the call; or held ones
    ///     (``OwnedVariant``), which the call references while it runs.
    ///   - absentWhen: D-Bus error names that mean "no such thing" for this call: the function
    ///     then returns nil instead of throwing.
    ///   - timeout: milliseconds; -1 for GDBus's default (25 s), which prompts do not extend
    ///     because a prompt's wait happens in its own call.
    /// - Throws: the error mapped by ``takeError(_:)``, or ``KeychainError/protocolError(reason:)``
    ///   when the reply cannot be read.
    static func call(
        _ connection: OpaquePointer?, destination: String = providerBusName,
        path: String = SecretServiceNames.Path.service, interface: String, method: String,
        arguments: [DBusValue] = [], encoded: [OpaquePointer] = [], absentWhen: Set<String> = [], timeout: Int32 = -1
    ) throws(KeychainError) -> [DBusValue]? {
        guard let reply = try callForReply(
            connection, destination: destination, path: path, interface: interface, method: method, arguments: arguments,
            encoded: encoded, absentWhen: absentWhen, timeout: timeout)
        else { return nil }
        guard let values = DBusValue.makeValue(reply.pointer)?.tuple else {
            throw .protocolError(reason: "an unreadable reply to \(method)")
        }
        return values
    }

    /// ``call(_:destination:path:interface:method:arguments:encoded:absentWhen:timeout:)``,
    /// with the reply as GDBus gave it, for the bulk calls that read a large reply in place.
    static func callForReply(
        _ connection: OpaquePointer?, destination: String = providerBusName,
        path: String = SecretServiceNames.Path.service, interface: String, method: String,
        arguments: [DBusValue] = [], encoded: [OpaquePointer] = [], absentWhen: Set<String> = [], timeout: Int32 = -1
    ) throws(KeychainError) -> OwnedVariant? {
        let outcome = try callOutcome(
            connection, destination: destination, path: path, interface: interface, method: method, arguments: arguments,
            encoded: encoded, absentWhen: absentWhen, timeout: timeout)
        guard case .reply(let reply) = outcome else { return nil }
        return reply
    }

    /// What a call gives: its reply, or which error of `absentWhen` said there is none.
    enum CallOutcome {
        /// The reply, as GDBus gave it.
        case reply(OwnedVariant)
        /// The D-Bus error name, one of `absentWhen`.
        case absent(String)
    }

    /// ``callForReply(_:destination:path:interface:method:arguments:encoded:absentWhen:timeout:)``,
    /// saying which error of `absentWhen` came, for a caller that goes on differently for each.
    static func callOutcome(
        _ connection: OpaquePointer?, destination: String = providerBusName,
        path: String = SecretServiceNames.Path.service, interface: String, method: String,
        arguments: [DBusValue] = [], encoded: [OpaquePointer] = [], absentWhen: Set<String> = [], timeout: Int32 = -1
    ) throws(KeychainError) -> CallOutcome {
        let parameters = DBusValue.makeTuple(arguments, appending: encoded)  // floating, taken by the call
        var error: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_sync(
            connection, destination, path, interface, method, parameters, nil, G_DBUS_CALL_FLAGS_NONE, timeout,
            Cancellation.current, &error)  // transfer full
        if let error {
            if let reply { g_variant_unref(reply) }
            if !absentWhen.isEmpty, let remote = g_dbus_error_get_remote_error(error) {
                defer { g_free(remote) }
                let name = String(cString: remote)
                if absentWhen.contains(name) {
                    g_error_free(error)
                    return .absent(name)
                }
            }
            throw takeError(error)
        }
        guard let reply else { throw .protocolError(reason: "no reply to \(method)") }
        return .reply(OwnedVariant(adopting: reply))
    }

    /// A `GVariant` this side holds a reference to (a method reply as GDBus gave it, a large
    /// argument built ahead), unreferenced when released.
    final class OwnedVariant: @unchecked Sendable {
        /// The value (`GVariant *`).
        let pointer: OpaquePointer

        /// Takes over `pointer`'s reference (transfer full).
        init(adopting pointer: OpaquePointer) { self.pointer = pointer }

        /// Takes `floating`'s floating reference.
        init(sinking floating: OpaquePointer) { pointer = g_variant_ref_sink(floating) }

        deinit { g_variant_unref(pointer) }

        /// Whether it is of the D-Bus type `signature`.
        func isOfType(_ signature: String) -> Bool {
            let type = g_variant_type_new(signature)
            defer { g_variant_type_free(type) }
            return g_variant_is_of_type(pointer, type) != 0
        }
    }
}

extension LibSecret {
    /// Calls `method` of the session bus daemon itself (`org.freedesktop.DBus`) on a connection
    /// of GDBus's own, not libsecret's service proxy, whose creation would start a provider
    /// through D-Bus activation.
    static func callBusDaemon(_ method: String, arguments: [DBusValue] = [], absentWhen: Set<String> = [])
        throws(KeychainError) -> [DBusValue]?
    {
        var error: UnsafeMutablePointer<GError>?
        guard let bus = g_bus_get_sync(G_BUS_TYPE_SESSION, Cancellation.current, &error) else {  // transfer full
            throw error.map { takeError($0) } ?? .noProvider(reason: "no session bus")
        }
        defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
        return try call(
            bus, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", method: method, arguments: arguments, absentWhen: absentWhen, timeout: 5_000)
    }

    /// The process ids of the owner of `busName` and of every connection queued for it, the
    /// owner first; empty when it has no owner.
    static func busNameClaimants(_ busName: String) throws(KeychainError) -> [UInt32] {
        let absent: Set<String> = ["org.freedesktop.DBus.Error.NameHasNoOwner"]
        let names = try callBusDaemon("ListQueuedOwners", arguments: [.string(busName)], absentWhen: absent)?.first?.strings ?? []
        var pids: [UInt32] = []
        for name in names {
            if let pid = try callBusDaemon("GetConnectionUnixProcessID", arguments: [.string(name)], absentWhen: absent)?.first?.uint32 {
                pids.append(pid)
            }
        }
        return pids
    }

    /// Errors that mean the provider lacks one of secretd's own interfaces (gnome-keyring has
    /// no access groups, app keys or PIN).
    private static let noSecretdInterface: Set<String> = [
        "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownObject",
    ]

    /// Calls `method` of one of secretd's own interfaces on its service object, with
    /// `arguments` and then `encoded` (floating, consumed). A provider without it (gnome-keyring)
    /// is ``KeychainError/notSupported(feature:)`` naming `feature`. `timeout` is in
    /// milliseconds (-1: GDBus's 25 s).
    static func callSecretd(
        _ service: UnsafeMutablePointer<SecretService>, _ interface: String, _ method: String, _ arguments: [DBusValue] = [],
        encoded: [OpaquePointer] = [], feature: String, timeout: Int32 = -1
    ) throws(KeychainError) -> [DBusValue] {
        guard let reply = try call(
            connection(of: service), interface: interface, method: method, arguments: arguments, encoded: encoded,
            absentWhen: noSecretdInterface, timeout: timeout)
        else { throw .notSupported(feature: "\(feature) (secretd has them)") }
        return reply
    }
}

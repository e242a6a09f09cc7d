// The test support's only GIO file: a private D-Bus connection for what tests do behind the
// library's back (checking the bus name, locking and unlocking collections).

internal import CGio
import DBusValues
import Foundation
import KeychainCore

/// An error from a D-Bus call made by the test harness.
public struct BusError: Error, CustomStringConvertible {
    /// GLib's message, including the remote D-Bus error name.
    public let description: String
    /// The D-Bus error name of a refused call (`org.freedesktop.Secret.Error.NoSuchObject`); nil
    /// for a failure on this side (no reply, text that does not parse).
    public let name: String?

    init(description: String, name: String? = nil) {
        self.description = description
        self.name = name
    }
}

/// A private connection to a test bus (never the GLib session-bus singleton libsecret uses).
public final class BusConnection: @unchecked Sendable {
    /// The GDBus connection (a ``SignalRecorder`` may listen on it too).
    let connection: OpaquePointer

    /// Connects to the bus at `address`.
    public init(address: String) throws(BusError) {
        var error: UnsafeMutablePointer<GError>?
        let flags = GDBusConnectionFlags(
            rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        guard let connection = g_dbus_connection_new_for_address_sync(address, flags, nil, nil, &error) else {
            throw Self.take(error)
        }
        self.connection = connection
    }

    deinit {
        g_dbus_connection_close_sync(connection, nil, nil)
        g_object_unref(UnsafeMutableRawPointer(connection))
    }

    /// Whether some connection owns `name`.
    public func nameHasOwner(_ name: String) throws(BusError) -> Bool {
        let reply = try call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", [.string(name)],
            replyType: "(b)")
        return reply[0].boolean!
    }

    /// Waits (up to `timeout` seconds) until `name` is owned; stops `process` and throws with its
    /// log when it exits first or the time runs out.
    public func waitForOwner(of name: String, startedBy process: SupervisedProcess, timeout: Double = 20) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !nameHasOwner(name) {
            guard process.isRunning, Date() < deadline else {
                process.stop()
                throw HarnessError("the process did not take \(name): \(process.log)")
            }
            usleep(20_000)
        }
    }

    /// Waits (up to `timeout` seconds) until nobody owns `name`.
    public func waitUntilUnowned(_ name: String, timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try nameHasOwner(name) {
            guard Date() < deadline else { throw HarnessError("\(name) is still owned") }
            usleep(20_000)
        }
    }

    /// The object path the provider's alias (`default`) points at, or `nil` when unset.
    public func readAlias(_ alias: String) throws(BusError) -> String? {
        let reply = try callService(SecretServiceNames.Interface.service, "ReadAlias", [.string(alias)], replyType: "(o)")
        let path = reply[0].objectPath!
        return path == SecretServiceNames.Path.none ? nil : path
    }

    /// Locks the given collections or items (`org.freedesktop.Secret.Service.Lock`).
    public func lock(_ paths: [String]) throws(BusError) {
        _ = try callService(SecretServiceNames.Interface.service, "Lock", [.objectPaths(paths)], replyType: "(aoo)")
    }

    /// Unlocks `collection` with its password through gnome-keyring's extension interface
    /// (`UnlockWithMasterPassword` on `/org/freedesktop/secrets`, where gnome-keyring 42 serves
    /// it), over a `plain` session opened for the call.
    public func unlock(_ collection: String, password: String) throws(BusError) {
        let session = try openPlainSession()
        let secret = DBusValue.tuple([
            .objectPath(session), .bytes(DBusBytes([])), .bytes(DBusBytes(Array(password.utf8))), .string("text/plain"),
        ])
        _ = try callService(
            SecretServiceNames.Interface.gnomeExtension, "UnlockWithMasterPassword", [.objectPath(collection), secret],
            replyType: "()")
    }

    /// Calls `method` with arguments written in GVariant text format (as `gdbus call` takes
    /// them, e.g. `"('plain', <''>)"`) and returns the reply in the same format.
    ///
    /// - Throws: ``BusError`` whose description starts with the D-Bus error name.
    public func call(
        _ path: String, _ interface: String, _ method: String, _ arguments: String = "()",
        destination: String = TestEnvironment.busName
    ) throws(BusError) -> String {
        let parameters: OpaquePointer
        do throws(DBusValue.TextFormatError) {
            parameters = try DBusValue.parseText(arguments)
        } catch {
            throw BusError(description: error.message)
        }
        var callError: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_sync(
            connection, destination, path, interface, method, parameters, nil, G_DBUS_CALL_FLAGS_NONE, 30_000, nil,
            &callError)
        guard let reply else { throw Self.takeRemote(callError) }
        defer { g_variant_unref(reply) }
        return DBusValue.text(of: reply)
    }

    /// Calls `CreateItem` on `collection` with a plain-session secret of raw bytes (for sizes
    /// GVariant text cannot carry quickly); returns the reply in GVariant text format.
    public func createItem(
        in collection: String, session: String, attributes: [String: String], secret: [UInt8]
    ) throws(BusError) -> String {
        let properties = DBusValue.properties([SecretServiceNames.Property.itemAttributes: .stringMap(attributes)])
        let value = DBusValue.tuple([.objectPath(session), .bytes(DBusBytes([])), .bytes(DBusBytes(secret)), .string("text/plain")])
        let parameters = DBusValue.makeTuple([properties, value, .boolean(false)])
        var error: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_sync(
            connection, SecretServiceNames.busName, collection, SecretServiceNames.Interface.collection, "CreateItem",
            parameters, nil, G_DBUS_CALL_FLAGS_NONE, 60_000, nil, &error)
        guard let reply else { throw Self.takeRemote(error) }
        defer { g_variant_unref(reply) }
        return DBusValue.text(of: reply)
    }

    /// This connection's unique bus name.
    public var uniqueName: String { String(cString: g_dbus_connection_get_unique_name(connection)) }

    // MARK: - Plumbing

    /// A BusError "<remote error name>: <message>" for a failed call.
    private static func takeRemote(_ error: UnsafeMutablePointer<GError>?) -> BusError {
        guard let error else { return BusError(description: "unknown D-Bus error") }
        let name = g_dbus_error_get_remote_error(error).map { pointer -> String in
            defer { g_free(pointer) }
            return String(cString: pointer)
        }
        _ = g_dbus_error_strip_remote_error(error)
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        g_error_free(error)
        return BusError(description: "\(name ?? "local"): \(message)", name: name)
    }

    /// Opens a `plain` session with the provider; returns its path.
    private func openPlainSession() throws(BusError) -> String {
        let opened = try callService(
            SecretServiceNames.Interface.service, "OpenSession", [.string("plain"), .variant(.string(""))], replyType: "(vo)")
        return opened[1].objectPath!
    }

    /// Calls `method` of `interface` on the provider's service object.
    private func callService(
        _ interface: String, _ method: String, _ arguments: [DBusValue], replyType: String
    ) throws(BusError) -> [DBusValue] {
        try call(SecretServiceNames.busName, SecretServiceNames.Path.service, interface, method, arguments, replyType: replyType)
    }

    /// Calls a method synchronously (10 s timeout); GDBus checks the reply against `replyType`,
    /// so the caller may read it by position.
    private func call(
        _ destination: String, _ path: String, _ interface: String, _ method: String,
        _ arguments: [DBusValue], replyType: String
    ) throws(BusError) -> [DBusValue] {
        var error: UnsafeMutablePointer<GError>?
        let type = g_variant_type_new(replyType)
        defer { g_variant_type_free(type) }
        let reply = g_dbus_connection_call_sync(
            connection, destination, path, interface, method, DBusValue.makeTuple(arguments), type,
            G_DBUS_CALL_FLAGS_NONE, 10_000, nil, &error)
        guard let reply else { throw Self.take(error) }
        defer { g_variant_unref(reply) }
        guard let values = DBusValue.makeValue(reply)?.tuple else {
            throw BusError(description: "an unreadable reply to \(method)")
        }
        return values
    }

    private static func take(_ error: UnsafeMutablePointer<GError>?) -> BusError {
        guard let error else { return BusError(description: "unknown D-Bus error") }
        defer { g_error_free(error) }
        return BusError(description: error.pointee.message.map { String(cString: $0) } ?? "")
    }
}

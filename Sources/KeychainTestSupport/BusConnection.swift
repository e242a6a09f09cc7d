// The test support's only GIO file: a private D-Bus connection for what tests do behind the
// library's back (checking the bus name, locking and unlocking collections).

internal import CGio
import Foundation

/// An error from a D-Bus call made by the test harness.
public struct BusError: Error, CustomStringConvertible {
    /// GLib's message, including the remote D-Bus error name.
    public let description: String
}

/// A private connection to a test bus (never the GLib session-bus singleton libsecret uses).
public final class BusConnection: @unchecked Sendable {
    private let connection: OpaquePointer

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
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
            tuple([g_variant_new_string(name)]), replyType: "(b)")
        defer { g_variant_unref(reply) }
        let value = g_variant_get_child_value(reply, 0)
        defer { g_variant_unref(value) }
        return g_variant_get_boolean(value) != 0
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
        let reply = try call(
            Self.secrets, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "ReadAlias",
            tuple([g_variant_new_string(alias)]), replyType: "(o)")
        defer { g_variant_unref(reply) }
        let value = g_variant_get_child_value(reply, 0)
        defer { g_variant_unref(value) }
        let path = String(cString: g_variant_get_string(value, nil))
        return path == "/" ? nil : path
    }

    /// Locks the given collections or items (`org.freedesktop.Secret.Service.Lock`).
    public func lock(_ paths: [String]) throws(BusError) {
        let array = Self.objectPaths(paths)
        let reply = try call(
            Self.secrets, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Lock",
            tuple([array]), replyType: "(aoo)")
        g_variant_unref(reply)
    }

    /// Unlocks `collection` with its password through gnome-keyring's extension interface
    /// (`UnlockWithMasterPassword` on `/org/freedesktop/secrets`, where gnome-keyring 42 serves
    /// it), over a `plain` session opened for the call.
    public func unlock(_ collection: String, password: String) throws(BusError) {
        let opened = try call(
            Self.secrets, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession",
            tuple([g_variant_new_string("plain"), g_variant_new_variant(g_variant_new_string(""))]),
            replyType: "(vo)")
        defer { g_variant_unref(opened) }
        let sessionValue = g_variant_get_child_value(opened, 1)
        defer { g_variant_unref(sessionValue) }
        let session = String(cString: g_variant_get_string(sessionValue, nil))
        let secret = tuple([
            g_variant_new_object_path(session), Self.bytes([]), Self.bytes(Array(password.utf8)),
            g_variant_new_string("text/plain"),
        ])
        let reply = try call(
            Self.secrets, "/org/freedesktop/secrets",
            "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface", "UnlockWithMasterPassword",
            tuple([g_variant_new_object_path(collection), secret]), replyType: "()")
        g_variant_unref(reply)
    }

    /// Calls `method` with arguments written in GVariant text format (as `gdbus call` takes
    /// them, e.g. `"('plain', <''>)"`) and returns the reply in the same format.
    ///
    /// - Throws: ``BusError`` whose description starts with the D-Bus error name.
    public func call(
        _ path: String, _ interface: String, _ method: String, _ arguments: String = "()",
        destination: String = "org.freedesktop.secrets"
    ) throws(BusError) -> String {
        var error: UnsafeMutablePointer<GError>?
        guard let parameters = g_variant_parse(nil, arguments, nil, nil, &error) else { throw Self.take(error) }
        var callError: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_sync(
            connection, destination, path, interface, method, parameters, nil, G_DBUS_CALL_FLAGS_NONE, 30_000, nil,
            &callError)
        guard let reply else { throw Self.takeRemote(callError) }
        defer { g_variant_unref(reply) }
        let text = g_variant_print(reply, 1)!
        defer { g_free(text) }
        return String(cString: text)
    }

    /// Calls `CreateItem` on `collection` with a plain-session secret of raw bytes (for sizes
    /// GVariant text cannot carry quickly); returns the reply in GVariant text format.
    public func createItem(
        in collection: String, session: String, attributes: [String: String], secret: [UInt8]
    ) throws(BusError) -> String {
        let dictionaryType = g_variant_type_new("{ss}")
        defer { g_variant_type_free(dictionaryType) }
        let entries: [OpaquePointer?] = attributes.map {
            g_variant_new_dict_entry(g_variant_new_string($0.key), g_variant_new_string($0.value))
        }
        let attributeArray = entries.withUnsafeBufferPointer {
            g_variant_new_array(dictionaryType, $0.baseAddress, gsize($0.count))
        }
        let propertyType = g_variant_type_new("{sv}")
        defer { g_variant_type_free(propertyType) }
        let property: [OpaquePointer?] = [
            g_variant_new_dict_entry(
                g_variant_new_string("org.freedesktop.Secret.Item.Attributes"), g_variant_new_variant(attributeArray))
        ]
        let properties = property.withUnsafeBufferPointer { g_variant_new_array(propertyType, $0.baseAddress, 1) }
        let value = tuple([g_variant_new_object_path(session), Self.bytes([]), Self.bytes(secret), g_variant_new_string("text/plain")])
        var error: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_sync(
            connection, Self.secrets, collection, "org.freedesktop.Secret.Collection", "CreateItem",
            tuple([properties, value, g_variant_new_boolean(0)]), nil, G_DBUS_CALL_FLAGS_NONE, 60_000, nil, &error)
        guard let reply else { throw Self.takeRemote(error) }
        defer { g_variant_unref(reply) }
        let text = g_variant_print(reply, 1)!
        defer { g_free(text) }
        return String(cString: text)
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
        return BusError(description: "\(name ?? "local"): \(message)")
    }

    private static let secrets = "org.freedesktop.secrets"

    /// Calls a method synchronously (10 s timeout); returns the reply (transfer full).
    private func call(
        _ destination: String, _ path: String, _ interface: String, _ method: String,
        _ parameters: OpaquePointer, replyType: String
    ) throws(BusError) -> OpaquePointer {
        var error: UnsafeMutablePointer<GError>?
        let type = g_variant_type_new(replyType)
        defer { g_variant_type_free(type) }
        let reply = g_dbus_connection_call_sync(
            connection, destination, path, interface, method, parameters, type,
            G_DBUS_CALL_FLAGS_NONE, 10_000, nil, &error)
        guard let reply else { throw Self.take(error) }
        return reply
    }

    private func tuple(_ children: [OpaquePointer?]) -> OpaquePointer {
        children.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }

    private static func bytes(_ bytes: [UInt8]) -> OpaquePointer {
        let type = g_variant_type_new("y")
        defer { g_variant_type_free(type) }
        return bytes.withUnsafeBytes { g_variant_new_fixed_array(type, $0.baseAddress, gsize($0.count), 1) }
    }

    private static func objectPaths(_ paths: [String]) -> OpaquePointer {
        let type = g_variant_type_new("o")
        defer { g_variant_type_free(type) }
        let children = paths.map { g_variant_new_object_path($0) }
        return children.withUnsafeBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }
    }

    private static func take(_ error: UnsafeMutablePointer<GError>?) -> BusError {
        guard let error else { return BusError(description: "unknown D-Bus error") }
        defer { g_error_free(error) }
        return BusError(description: error.pointee.message.map { String(cString: $0) } ?? "")
    }
}

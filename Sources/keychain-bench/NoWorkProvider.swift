internal import CGio
internal import CLibSecret  // GIO's structs come through it too (both modules include gio.h)
import DBusValues
import Foundation
import KeychainCore

/// A Secret Service provider that does no work: it answers `OpenSession` (plain only),
/// `SearchItems` (one item), `GetSecrets` (a fixed secret) and the service's properties with
/// replies built once at start. `make bench` times libsecret lookups against it to measure
/// what GDBus and libsecret alone cost, so that secretd's lookup can be read against the best
/// a provider on the same stack could do, in the same run.
enum NoWorkProvider {
    /// Where the replies are made.
    enum Mode: String {
        /// On the GLib main loop, through a registered object, as secretd (and every GDBus
        /// service) answers: GDBus's thread hands each call to the main thread.
        case mainLoop = "main-loop"
        /// In GDBus's own thread, from a message filter, as GDBus answers `Peer.Ping`.
        case workerThread = "worker-thread"
    }

    static let servicePath = SecretServiceNames.Path.service
    static let sessionPath = SecretServiceNames.Path.sessionPrefix + "/1"
    static let itemPath = SecretServiceNames.Path.collection("login") + "/1"

    /// Owns `org.freedesktop.secrets` on the session bus and serves until killed.
    static func serve(_ mode: Mode, secret: String) -> Never {
        var error: UnsafeMutablePointer<GError>?
        guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error) else { fail("no session bus") }
        replies = Replies(secret: secret)
        switch mode {
        case .mainLoop:
            guard let info = g_dbus_node_info_new_for_xml(introspection, &error),
                g_dbus_connection_register_object(connection, servicePath, g_dbus_node_info_lookup_interface(info, SecretServiceNames.Interface.service), vtable, nil, nil, &error) != 0
            else { fail("cannot export \(servicePath)") }
        case .workerThread:
            g_dbus_connection_add_filter(connection, filter, nil, nil)
        }
        g_bus_own_name_on_connection(connection, SecretServiceNames.busName, G_BUS_NAME_OWNER_FLAGS_NONE, nil, nil, nil, nil)
        g_main_loop_run(g_main_loop_new(nil, 0))
        fail("main loop ended")
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("keychain-bench --serve-no-work: \(message)\n".utf8))
        exit(1)
    }

    /// The canned replies (sunk, never freed), made once.
    private struct Replies: @unchecked Sendable {
        let openSession, searchItems, getSecrets, getAll, collections: OpaquePointer

        init(secret: String) {
            let value = DBusValue.tuple([
                .objectPath(sessionPath), .bytes(DBusBytes([])), .bytes(DBusBytes(Array(secret.utf8))), .string("text/plain"),
            ])
            openSession = Self.make(.tuple([.variant(.string("")), .objectPath(sessionPath)]))
            searchItems = Self.make(.tuple([.objectPaths([itemPath]), .objectPaths([])]))
            getSecrets = Self.make(.tuple([
                .dictionary(key: "o", value: "(oayays)", [DBusValue.Entry(key: .objectPath(itemPath), value: value)])
            ]))
            getAll = Self.make(.tuple([.properties(["Collections": .objectPaths([])])]))
            collections = Self.make(.objectPaths([]))
        }

        private static func make(_ value: DBusValue) -> OpaquePointer { g_variant_ref_sink(DBusValue.makeVariant(value)) }

        /// The reply to `interface.method`, or the D-Bus error name to answer with.
        func reply(interface: String, method: String, firstArgument: String?) -> Result<OpaquePointer, DBusErrorName> {
            switch (interface, method) {
            case (SecretServiceNames.Interface.service, "OpenSession"):
                firstArgument == "plain" ? .success(openSession) : .failure(DBusErrorName("org.freedesktop.DBus.Error.NotSupported"))
            case (SecretServiceNames.Interface.service, "SearchItems"): .success(searchItems)
            case (SecretServiceNames.Interface.service, "GetSecrets"): .success(getSecrets)
            case (SecretServiceNames.Interface.properties, "GetAll"): .success(getAll)
            default: .failure(DBusErrorName("org.freedesktop.DBus.Error.UnknownMethod"))
            }
        }
    }

    private struct DBusErrorName: Error { let name: String; init(_ name: String) { self.name = name } }

    nonisolated(unsafe) private static var replies: Replies!

    /// The call's first argument when it is a string. Read straight from the GVariant rather
    /// than through DBusValue: this provider is the floor secretd is measured against, so it
    /// converts nothing it does not need.
    private static func firstString(_ parameters: OpaquePointer?) -> String? {
        guard let parameters, g_variant_n_children(parameters) > 0 else { return nil }
        let first = g_variant_get_child_value(parameters, 0)!
        defer { g_variant_unref(first) }
        guard String(cString: g_variant_get_type_string(first)) == "s" else { return nil }
        return String(cString: g_variant_get_string(first, nil))
    }

    private static let introspection = """
        <node><interface name="org.freedesktop.Secret.Service">
        <method name="OpenSession"><arg type="s" direction="in"/><arg type="v" direction="in"/>
          <arg type="v" direction="out"/><arg type="o" direction="out"/></method>
        <method name="SearchItems"><arg type="a{ss}" direction="in"/><arg type="ao" direction="out"/>
          <arg type="ao" direction="out"/></method>
        <method name="GetSecrets"><arg type="ao" direction="in"/><arg type="o" direction="in"/>
          <arg type="a{o(oayays)}" direction="out"/></method>
        <property name="Collections" type="ao" access="read"/>
        </interface></node>
        """

    nonisolated(unsafe) private static let vtable: UnsafeMutablePointer<GDBusInterfaceVTable> = {
        let table = UnsafeMutablePointer<GDBusInterfaceVTable>.allocate(capacity: 1)
        table.initialize(to: GDBusInterfaceVTable(
            method_call: { _, _, _, interface, method, parameters, invocation, _ in
                switch replies.reply(interface: String(cString: interface!), method: String(cString: method!),
                                     firstArgument: firstString(parameters)) {
                case .success(let reply): g_dbus_method_invocation_return_value(invocation, reply)
                case .failure(let error): g_dbus_method_invocation_return_dbus_error(invocation, error.name, "not supported")
                }
            },
            get_property: { _, _, _, _, _, _, _ in g_variant_ref(replies.collections) },
            set_property: nil,
            padding: (nil, nil, nil, nil, nil, nil, nil, nil)))
        return table
    }()

    private static let filter: GDBusMessageFilterFunction = { connection, message, incoming, _ in
        guard let message, incoming != 0, g_dbus_message_get_message_type(message) == G_DBUS_MESSAGE_TYPE_METHOD_CALL,
            let path = g_dbus_message_get_path(message), String(cString: path) == servicePath,
            let interface = g_dbus_message_get_interface(message), let method = g_dbus_message_get_member(message),
            [SecretServiceNames.Interface.service, SecretServiceNames.Interface.properties].contains(String(cString: interface))
        else { return message }  // Peer.Ping and Introspect: GDBus's own answers
        let answer: OpaquePointer
        switch replies.reply(interface: String(cString: interface), method: String(cString: method),
                             firstArgument: firstString(g_dbus_message_get_body(message))) {
        case .success(let reply):
            answer = g_dbus_message_new_method_reply(message)
            g_dbus_message_set_body(answer, reply)
        case .failure(let error):
            answer = g_dbus_message_new_method_error_literal(message, error.name, "not supported")
        }
        g_dbus_connection_send_message(connection, answer, G_DBUS_SEND_MESSAGE_FLAGS_NONE, nil, nil)
        g_object_unref(UnsafeMutableRawPointer(answer))
        g_object_unref(UnsafeMutableRawPointer(message))
        return nil
    }
}

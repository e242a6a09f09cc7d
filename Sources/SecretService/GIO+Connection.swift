// The bus connection: opening it, and opening it again when the bus closes it.

internal import CGio

extension BusServer {
    /// Opens a connection of secretd's own to the session bus.
    ///
    /// Not GLib's shared one (`g_bus_get_sync`), which ends the process with SIGTERM when the
    /// connection closes: GDBus closes it by itself when it cannot decode a message the bus
    /// passed on (GLib 2.74 misreads some arrays of 8-aligned elements that the bus accepts), so
    /// any client could stop secretd that way. secretd reconnects instead (see ``reconnect()``).
    static func connectToSessionBus() throws(SecretServiceError) -> OpaquePointer {
        var error: UnsafeMutablePointer<GError>?
        guard let address = g_dbus_address_get_for_bus_sync(G_BUS_TYPE_SESSION, nil, &error) else {
            throw .failed("cannot connect to the session bus: \(take(error))")
        }
        defer { g_free(address) }
        let flags = GDBusConnectionFlags(
            rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        guard let connection = g_dbus_connection_new_for_address_sync(address, flags, nil, nil, &error) else {
            throw .failed("cannot connect to the session bus: \(take(error))")
        }
        return connection
    }

    /// Replaces GDBus's warning about a message it cannot decode, which holds a hex dump of the
    /// whole message (secrets and all), with one line saying why. Other GIO warnings pass.
    static func quietDecodeWarnings() {
        g_log_set_handler("GLib-GIO", GLogLevelFlags(rawValue: G_LOG_LEVEL_WARNING.rawValue), { domain, level, message, _ in
            guard let message else { return }
            let text = String(cString: message)
            guard text.hasPrefix("Error decoding D-Bus message") else {
                g_log_default_handler(domain, level, message, nil)
                return
            }
            let reason = text.split(separator: "\n").first { $0.hasPrefix("The error is: ") }?.dropFirst(14) ?? "unknown"
            Log.warning("GDBus could not decode a message from the bus (\(reason)); its content is not logged")
        }, nil)
    }

    /// Makes `connection` the server's: the call quota filters it, GDBus's thread answers quick
    /// reads, and its closing is watched.
    func adopt(_ connection: OpaquePointer) {
        g_dbus_connection_set_exit_on_close(connection, 0)
        g_dbus_connection_add_filter(connection, Self.quotaFilter, Unmanaged.passUnretained(quota).toOpaque(), nil)
        // After the quota's filter (GDBus runs them in order): it counts the calls this one answers.
        g_dbus_connection_add_filter(connection, Self.quickReadFilter, Unmanaged.passUnretained(self).toOpaque(), nil)
        let closed: @convention(c) (OpaquePointer?, gboolean, UnsafeMutablePointer<GError>?, gpointer?) -> Void = {
            _, _, error, userData in
            let reason = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "closed"
            Unmanaged<BusServer>.fromOpaque(userData!).takeUnretainedValue().connectionClosed(reason: reason)
        }
        g_signal_connect_data(
            UnsafeMutableRawPointer(connection), "closed", unsafeBitCast(closed, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque(), nil, GConnectFlags(rawValue: 0))
    }

    /// The bus closed the connection (or GDBus did, on a message it could not decode): the
    /// name is gone with it. Reconnects on the main loop; the old ownership's callbacks no
    /// longer count.
    private func connectionClosed(reason: String) {
        ownershipGeneration += 1
        Log.warning("lost the connection to the session bus (\(reason)); connecting again")
        BusServer.after(seconds: 0) { [weak self] in self?.reconnect(attempt: 1) }
    }

    /// Connects again, exports every object again and asks for the name again; clients keep
    /// their sessions. When the bus is really gone (the session ended), exits the main loop.
    private func reconnect(attempt: Int) {
        let fresh: OpaquePointer
        do {
            fresh = try Self.connectToSessionBus()
        } catch {
            guard attempt < 5 else {
                Log.info("the session bus is gone (\(error.message)); exiting")
                BusServer.quit()
                return
            }
            BusServer.after(seconds: 0.2 * Double(attempt)) { [weak self] in self?.reconnect(attempt: attempt + 1) }
            return
        }
        let old = connection
        let oldName = g_dbus_connection_get_unique_name(old).map { String(cString: $0) }
        if ownerID != 0 { g_bus_unown_name(ownerID) }
        connection = fresh
        quota.reset()  // the calls waiting on the old connection are lost with it
        adopt(fresh)
        let exportedSubtrees = Array(subtrees.keys)
        subtrees = [:]
        do {
            for path in exportedSubtrees { try registerSubtree(path) }
        } catch {
            Log.error("cannot export the objects again: \(error.message); exiting")
            BusServer.quit()
            return
        }
        subscribeToDisconnects()
        g_object_unref(UnsafeMutableRawPointer(old))
        reconnectHandler?()
        ownNameAgain(after: oldName, deadline: 100)
    }

    /// Asks for the name again once the bus has noticed that the old connection (`oldName`)
    /// is gone; until then the bus still counts it as the owner, and asking would fail. Gives
    /// up waiting after `deadline` checks, 20 ms apart.
    private func ownNameAgain(after oldName: String?, deadline: Int) {
        if let oldName, deadline > 0, hasOwner(oldName) {
            BusServer.after(seconds: 0.02) { [weak self] in self?.ownNameAgain(after: oldName, deadline: deadline - 1) }
            return
        }
        if let (name, replace) = ownedName, let callbacks = nameCallbacks {
            ownName(name, replace: replace, acquired: callbacks.acquired, lost: callbacks.lost)
        }
    }
}

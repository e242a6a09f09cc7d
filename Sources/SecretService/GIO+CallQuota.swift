// The connection filter that keeps each client within its ``CallQuota``.

internal import CGio
internal import CProcess

extension BusServer {
    /// The error name of a call refused because its client has too much waiting.
    static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"

    /// Runs on GDBus's worker thread for every message in both directions, before GDBus queues
    /// incoming calls for the main loop: counts each client's calls against the quota, refuses
    /// those over it at once (with `LimitsExceeded`, or silently when no reply is expected), and
    /// sees the replies go out.
    ///
    /// A call sent with `NO_REPLY_EXPECTED` is counted too: the flag is cleared so that GDBus
    /// replies, which tells the quota the call is done, and the filter drops that reply.
    static let quotaFilter: GDBusMessageFilterFunction = { connection, message, incoming, userData in
        guard let message, let userData else { return message }
        let quota = Unmanaged<CallQuota>.fromOpaque(userData).takeUnretainedValue()
        let type = g_dbus_message_get_message_type(message)
        if incoming == 0 {
            guard type == G_DBUS_MESSAGE_TYPE_METHOD_RETURN || type == G_DBUS_MESSAGE_TYPE_ERROR,
                let destination = g_dbus_message_get_destination(message)
            else { return message }
            let reply = quota.replied(to: String(cString: destination), serial: g_dbus_message_get_reply_serial(message))
            // glibc keeps the heap a backlog of calls took; hand it back once the backlog is gone.
            if reply.drainedBacklog { _ = keychain_release_free_memory() }
            if reply.drop {
                g_object_unref(UnsafeMutableRawPointer(message))
                return nil  // the answer to a call that expected none
            }
            return message
        }
        guard type == G_DBUS_MESSAGE_TYPE_METHOD_CALL, let senderName = g_dbus_message_get_sender(message) else {
            return message
        }
        let sender = String(cString: senderName)
        let flags = g_dbus_message_get_flags(message).rawValue
        let silent = flags & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED.rawValue != 0
        let bytes = g_dbus_message_get_body(message).map { Int(g_variant_get_size($0)) } ?? 0
        let serial = g_dbus_message_get_serial(message)
        switch quota.admit(sender: sender, serial: serial, bytes: bytes, silent: silent) {
        case .admitted:
            guard silent else { return message }
            guard let copy = g_dbus_message_copy(message, nil) else {
                _ = quota.replied(to: sender, serial: serial)  // not counted after all
                return message
            }
            g_dbus_message_set_flags(copy, GDBusMessageFlags(rawValue: flags & ~G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED.rawValue))
            g_object_unref(UnsafeMutableRawPointer(message))
            return copy
        case .refused(let first):
            if first {
                let limits = quota.limits
                Log.warning(
                    "client \(sender) has \(limits.calls) calls (\(limits.silentCalls) expecting no reply) or "
                        + "\(limits.bytes >> 20) MiB waiting; its calls over that are refused with LimitsExceeded "
                        + "(logged once per client)")
            }
            if !silent, let connection,
                let refusal = g_dbus_message_new_method_error_literal(
                    message, limitsExceeded, "too many calls waiting for secretd from this connection; wait for the replies")
            {
                g_dbus_connection_send_message(connection, refusal, G_DBUS_SEND_MESSAGE_FLAGS_NONE, nil, nil)
                g_object_unref(UnsafeMutableRawPointer(refusal))
            }
            g_object_unref(UnsafeMutableRawPointer(message))
            return nil
        }
    }
}

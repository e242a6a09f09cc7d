// Quick reads: GDBus's worker thread answers the commonest reads itself.
//
// Every other call goes from GDBus's thread to the main loop and its reply back again: two
// thread wake-ups per call, about a third of what a lookup costs secretd. A lookup
// (`SearchItems`, then `GetSecrets` or an item's `GetSecret`) needs neither the main loop nor a
// wait, so the filter below answers it in GDBus's thread, under ``MainLoopLock``, when all of
// these hold:
// - the call is one the handler lists in ``BusHandler/quickReads``, with the arguments its
//   introspection data gives (checked here: GDBus checks them only for calls it dispatches);
// - it is its sender's only call waiting (``CallQuota``), so it overtakes nothing of theirs;
// - the lock is free at once (the main loop is waiting in poll): GDBus's thread never waits;
// - no write waits for its commit and no reply or signal waits for one, so a read never shows
//   what is not durable yet, nor comes before the replies of writes it would reveal;
// - the handler agrees (``BusHandler/answersAtOnce(_:)``): the object is one it serves, the
//   caller is identified already, the call is small, and nothing in it needs the main loop.
// Otherwise the call goes on to the main loop, as every call did before.

internal import CGio
import FoundationEssentials
import DBusValues

/// A method the handler may answer in GDBus's thread, on whichever objects it says
/// (``BusHandler/answersAtOnce(_:)``).
struct QuickRead: Hashable {
    /// The interface.
    var interface: String
    /// The method name.
    var method: String
}

extension BusServer {
    /// Runs on GDBus's worker thread for every message, after ``quotaFilter``: answers the
    /// incoming calls that qualify (see the top of this file) and drops them; passes on the rest.
    static let quickReadFilter: GDBusMessageFilterFunction = { connection, message, incoming, userData in
        guard incoming != 0, let connection, let message, let userData else { return message }
        let server = Unmanaged<BusServer>.fromOpaque(userData).takeUnretainedValue()
        guard server.answerAtOnce(message, on: connection) else { return message }
        g_object_unref(UnsafeMutableRawPointer(message))
        return nil
    }

    /// The in-signature of each of `reads`, from the introspection data; reads it does not
    /// describe are left out.
    static func signatures(of reads: [QuickRead], in node: UnsafeMutablePointer<GDBusNodeInfo>) -> [QuickRead: String] {
        var signatures: [QuickRead: String] = [:]
        for read in reads {
            guard let interface = g_dbus_node_info_lookup_interface(node, read.interface),
                let method = g_dbus_interface_info_lookup_method(interface, read.method)
            else { continue }
            var signature = ""
            var argument = method.pointee.in_args
            while let info = argument?.pointee {
                signature += String(cString: info.pointee.signature)
                argument = argument?.advanced(by: 1)
            }
            signatures[read] = signature
        }
        return signatures
    }

    /// Answers `message` here and now if it qualifies; true when it was answered.
    private func answerAtOnce(_ message: OpaquePointer, on connection: OpaquePointer) -> Bool {
        guard g_dbus_message_get_message_type(message) == G_DBUS_MESSAGE_TYPE_METHOD_CALL,
            let senderName = g_dbus_message_get_sender(message), let pathName = g_dbus_message_get_path(message),
            let interfaceName = g_dbus_message_get_interface(message), let memberName = g_dbus_message_get_member(message)
        else { return false }
        let path = String(cString: pathName)
        let interface = String(cString: interfaceName)
        let method = String(cString: memberName)
        guard let signature = quickReads[QuickRead(interface: interface, method: method)],
            String(cString: g_dbus_message_get_signature(message)) == signature
        else { return false }
        let sender = String(cString: senderName)
        guard quota.waiting(for: sender).calls == 1, Self.mainLoopLock.tryLock() else { return false }
        defer { Self.mainLoopLock.unlock() }

        guard let handler, !handler.hasPendingCommit, !isHoldingReplies,
            let arguments = g_dbus_message_get_body(message).flatMap({ DBusValue.makeValue($0)?.tuple }) ?? (signature.isEmpty ? [] : nil)
        else { return false }
        let call = MethodCall(sender: sender, path: path, interface: interface, method: method, arguments: arguments)
        guard handler.answersAtOnce(call) else { return false }

        returnMemoryLater(after: Self.trimInterval)
        var result: Result<DBusValue, SecretServiceError> = handler.handle(call)
        // A read writes nothing; if one ever did, its reply must still wait for the commit.
        if handler.hasPendingCommit, !handler.commitPending() {
            result = .failure(.incomplete)
        }
        let reply: OpaquePointer?
        switch result {
        case .success(let value):
            reply = g_dbus_message_new_method_reply(message)
            let body = g_variant_ref_sink(DBusValue.makeVariant(value))
            if g_variant_get_size(body) > Self.largeReply { returnMemoryLater() }
            if let reply { g_dbus_message_set_body(reply, body) }
            g_variant_unref(body)
        case .failure(let error):
            reply = g_dbus_message_new_method_error_literal(message, error.dbusName, error.message)
        }
        guard let reply else { return false }  // cannot happen for a call that expects a reply
        g_dbus_connection_send_message(connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE, nil, nil)
        g_object_unref(UnsafeMutableRawPointer(reply))
        if Self.traceQuickReads { Log.info("answered \(method) in GDBus's thread") }
        return true
    }

    /// Debug builds log every quick read when `SECRETD_TRACE_QUICK_READS` is set, so the tests
    /// can see that they happen; release builds never do.
    private static let traceQuickReads: Bool = {
        #if DEBUG
            return getenv("SECRETD_TRACE_QUICK_READS") != nil
        #else
            return false
        #endif
    }()
}

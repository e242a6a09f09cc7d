internal import CSystemd
import Foundation
import Glibc
import KeychainCore

/// The floor of bench/stall.sh: a stand-in for the Secret Service that owns
/// `org.freedesktop.secrets` and answers at once, storing nothing. `OpenSession` gets a plain
/// session, `ReadAlias` no collection (`/`), `CreateItem` no item (`/`, `/`), anything else an
/// empty reply. It answers through sd-bus on one thread, as secretd does, so what another
/// client waits beside a large writer here is what the bus alone costs: dbus-daemon copying the
/// writer's message and this thread reading it before the next call. secretd's figure beside it
/// is read against this one, measured in the same run.
enum StandInService {
    /// Owns the Secret Service's name on the session bus and serves until killed.
    static func serve() -> Never {
        var connection: OpaquePointer?
        guard sd_bus_open_user(&connection) >= 0, let bus = connection else { fail("no session bus") }
        // A fallback at "/" is asked for every object path.
        let exported = sd_bus_add_fallback(bus, nil, "/", { message, _, _ in
            guard let message, sd_bus_message_is_method_call(message, nil, nil) > 0,
                let member = sd_bus_message_get_member(message)
            else { return 0 }
            switch String(cString: member) {
            case "OpenSession": return StandInService.reply(to: message, session: "/org/freedesktop/secrets/session/1")
            case "ReadAlias": return StandInService.reply(to: message, paths: ["/"])
            case "CreateItem": return StandInService.reply(to: message, paths: ["/", "/"])
            default: return StandInService.reply(to: message, paths: [])
            }
        }, nil)
        guard exported >= 0 else { fail("cannot serve /: \(String(cString: strerror(-exported)))") }
        let owned = sd_bus_request_name(bus, SecretServiceNames.busName, 0)
        guard owned >= 0 else { fail("cannot own \(SecretServiceNames.busName): \(String(cString: strerror(-owned)))") }
        while true {
            let processed = sd_bus_process(bus, nil)
            guard processed >= 0 else { fail("the bus failed: \(String(cString: strerror(-processed)))") }
            if processed == 0, sd_bus_wait(bus, UInt64.max) < 0 { fail("cannot wait for the bus") }
        }
    }

    /// Answers `call` with `paths` (object paths), or with a plain session's empty output and
    /// `session`. Returns what sd-bus's object callbacks return: 1 when answered.
    private static func reply(to call: OpaquePointer, paths: [String] = [], session: String? = nil) -> Int32 {
        var made: OpaquePointer?
        guard sd_bus_message_new_method_return(call, &made) >= 0, let reply = made else { return -ENOMEM }
        defer { sd_bus_message_unref(reply) }
        if let session {
            guard sd_bus_message_open_container(reply, CChar(UInt8(ascii: "v")), "s") >= 0,
                sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "s")), "") >= 0,
                sd_bus_message_close_container(reply) >= 0,
                sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "o")), session) >= 0
            else { return -ENOMEM }
        }
        for path in paths where sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "o")), path) < 0 { return -ENOMEM }
        let sent = sd_bus_send(nil, reply, nil)
        return sent < 0 ? sent : 1
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("keychain-bench --serve-stand-in: \(message)\n".utf8))
        exit(1)
    }
}

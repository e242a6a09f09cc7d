internal import CProcess
import Glibc

/// The listening sockets systemd passed secretd (sd_listen_fds(3): `LISTEN_PID` is this process,
/// descriptors from 3 on), by the name of the path each listens on: `secretd.socket`'s
/// `control` (the login socket) and `ssh-agent` (the SSH agent). Read once, at the first
/// question; the variables are then removed so that pinentry and other children do not see
/// them. Each socket is handed out once.
enum SystemdSockets {
    /// The passed sockets not handed out yet, by the last component of their path.
    nonisolated(unsafe) private static var waiting: [String: Int32]?

    /// The passed listening Unix socket whose path ends in `/name`; nil when systemd passed none.
    /// A passed socket at another path is left alone.
    static func take(named name: String) -> Int32? {
        if waiting == nil { waiting = read() }
        return waiting?.removeValue(forKey: name)
    }

    private static func read() -> [String: Int32] {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard let pid = getenv("LISTEN_PID").flatMap({ Int32(String(cString: $0)) }), pid == getpid(),
            let count = getenv("LISTEN_FDS").flatMap({ Int32(String(cString: $0)) }), count > 0, count < 64
        else { return [:] }
        var sockets: [String: Int32] = [:]
        for fd in 3..<(3 + count) where keychain_is_listening_unix_socket(fd) != 0 {
            _ = keychain_set_close_on_exec(fd)
            _ = keychain_set_non_blocking(fd)
            guard let path = path(of: fd) else { continue }
            sockets[String(path.split(separator: "/").last ?? "")] = fd
        }
        if sockets.isEmpty { Log.warning("systemd passed \(count) file descriptors but no listening Unix socket") }
        return sockets
    }

    /// The path the Unix socket `fd` is bound to.
    private static func path(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        return withUnsafeBytes(of: address.sun_path) { bytes in
            let path = bytes.prefix { $0 != 0 }
            return path.isEmpty ? nil : String(decoding: path, as: UTF8.self)
        }
    }
}

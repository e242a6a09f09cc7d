import Glibc

/// Logging to standard error with the `<N>` priority prefixes journald understands.
/// Never pass a secret, a password or an attribute value here.
enum Log {
    /// Something failed.
    static func error(_ message: String) { write(3, message) }
    /// Something unusual that the daemon handled.
    static func warning(_ message: String) { write(4, message) }
    /// Normal operation worth recording (start, stop, unlock).
    static func info(_ message: String) { write(6, message) }

    private static func write(_ priority: Int, _ message: String) {
        let line = "<\(priority)>secretd: \(message)\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { _ = Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

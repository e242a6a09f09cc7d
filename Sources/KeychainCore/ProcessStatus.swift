import FoundationEssentials

/// A process's own account of itself in `/proc/<pid>/status`, read one field at a time.
public enum ProcessStatus {
    /// The text after `field`'s colon (trimmed) for `pid` (nil: this process); nil when the
    /// process is gone or has no such field.
    public static func value(_ field: String, of pid: Int32? = nil) -> String? {
        let path = "/proc/\(pid.map(String.init) ?? "self")/status"
        guard let status = try? String(contentsOfFile: path, encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return nil }
        return line.dropFirst(field.count + 1).trimmingWhitespace
    }

    /// A field counted in kB (`VmRSS`, `VmHWM`), in KiB; nil as ``value(_:of:)``.
    public static func kibibytes(_ field: String, of pid: Int32? = nil) -> Int? {
        value(field, of: pid)?.split(separator: " ").first.flatMap { Int($0) }
    }
}

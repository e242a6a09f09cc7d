// secretd's limit on open files (RLIMIT_NOFILE): raised as it starts, and read for the call
// quota's bound on all clients (CallQuota.Limits.descriptorBound).

import Glibc

/// The soft limit on this process's open files.
public enum OpenFileLimit {
    /// The limit now (1024 when it cannot be read).
    static var current: Int { limits.map { Int(clamping: $0.rlim_cur) } ?? 1024 }

    /// The hard limit, which ``raiseToHard()`` raises the soft one to (1024 when it cannot be read).
    static var hard: Int { limits.map { Int(clamping: $0.rlim_max) } ?? 1024 }

    /// The soft and hard limits, or nil when they cannot be read.
    private static var limits: rlimit? {
        var limit = rlimit()
        return getrlimit(resource, &limit) == 0 ? limit : nil
    }

    /// Raises the soft limit to the hard one (systemd gives 1024 and 524288); returns why it
    /// could not. Any call may carry file descriptors (16 on dbus-daemon's session bus, at most
    /// 253 on any bus), named by its arguments or not, and secretd holds them while the call
    /// waits; when the kernel cannot hand over the next ones, sd-bus gives up the whole
    /// connection. At 1024, about 100 calls of 16 from one client were enough. secretd polls
    /// (GLib), so descriptors above 1024 are no problem.
    public static func raiseToHard() -> String? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return nil }
        limit.rlim_cur = limit.rlim_max
        guard setrlimit(resource, &limit) != 0 else { return nil }
        return "cannot raise its limit of open files to \(limit.rlim_max): \(String(cString: strerror(errno)))"
    }

    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
}

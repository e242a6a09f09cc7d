import FoundationEssentials
import KeychainCore
import Glibc

/// Resolving a client's identity (KeychainCore's CallerIdentity) from `/proc/PID`, strongest
/// first: the Flatpak app id in the process's `/.flatpak-info`, the snap from its cgroup, the
/// systemd service from its cgroup, else the canonical path of its executable.
extension CallerIdentity {
    /// Why a process could not be identified.
    enum ResolutionError: Error, Equatable, CustomStringConvertible {
        /// The process is gone (or `/proc` does not show it).
        case processGone(Int32)
        /// The process id now belongs to a process that started after the call was sent: the
        /// caller exited and its id was reused.
        case processChanged(Int32)

        var description: String {
            switch self {
            case .processGone(let pid): return "process \(pid) is gone"
            case .processChanged(let pid): return "process \(pid) was replaced by another while it was identified"
            }
        }
    }

    /// Identifies process `pid`, which sent a call that arrived at `receivedAt` (clock ticks
    /// since boot, as ``ticksSinceBoot()`` gives).
    ///
    /// Guards against process id reuse: the process's start time is read before and after,
    /// and must not be later than the call's arrival, so a process that took over the id of
    /// an exited caller is never mistaken for it.
    static func resolve(pid: Int32, receivedAt: UInt64, procRoot: String = "/proc") -> Result<CallerIdentity, ResolutionError> {
        let directory = "\(procRoot)/\(pid)"
        guard let started = startTime(directory) else { return .failure(.processGone(pid)) }
        guard started <= receivedAt else { return .failure(.processChanged(pid)) }
        let identity = flatpakApp(directory).map { CallerIdentity(kind: .flatpak, name: $0) }
            ?? cgroupIdentity(directory)
            ?? executable(directory).map { CallerIdentity(kind: .exe, name: $0) }
        guard let identity else { return .failure(.processGone(pid)) }
        guard startTime(directory) == started else { return .failure(.processChanged(pid)) }
        return .success(identity)
    }

    /// Clock ticks since boot, the unit of a process's start time in `/proc/PID/stat`.
    static func ticksSinceBoot() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let hertz = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        return UInt64(now.tv_sec) * hertz + UInt64(now.tv_nsec) * hertz / 1_000_000_000
    }

    // MARK: - Reading /proc

    /// Field 22 of `/proc/PID/stat`: when the process started, in clock ticks since boot.
    static func startTime(_ directory: String) -> UInt64? {
        guard let stat = read(directory + "/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// The app id from the `[Application]` group of the process's `/.flatpak-info`.
    private static func flatpakApp(_ directory: String) -> String? {
        guard let info = read(directory + "/root/.flatpak-info") else { return nil }
        var inApplication = false
        for rawLine in info.split(separator: "\n") {
            let line = rawLine.trimmingWhitespace
            if line.hasPrefix("[") {
                inApplication = line == "[Application]"
            } else if inApplication, line.hasPrefix("name=") {
                let name = String(line.dropFirst(5))
                return name.isEmpty ? nil : name
            }
        }
        return nil
    }

    /// A snap (`snap.NAME.APP…` scope or service) or a systemd service from the process's
    /// cgroup v2 path; the innermost service wins. `user@UID.service`, which holds a whole
    /// login's processes, names no one.
    private static func cgroupIdentity(_ directory: String) -> CallerIdentity? {
        guard let cgroups = read(directory + "/cgroup") else { return nil }
        guard let unified = cgroups.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) else { return nil }
        let components = unified.dropFirst(3).split(separator: "/").map(String.init)
        for component in components.reversed() {
            if component.hasPrefix("snap."), component.hasSuffix(".scope") || component.hasSuffix(".service") {
                let parts = component.split(separator: ".")
                if parts.count >= 3 { return CallerIdentity(kind: .snap, name: String(parts[1])) }
            }
        }
        for component in components.reversed() where component.hasSuffix(".service") {
            if component.hasPrefix("user@") { continue }
            return CallerIdentity(kind: .unit, name: component)
        }
        return nil
    }

    /// The canonical path of the process's executable (`/proc/PID/exe`), as it was when the
    /// process started it: a program replaced or removed on disk while it runs (a package
    /// upgrade writes the new file and renames it over the old) shows as `PATH (deleted)`, and
    /// is still named by PATH, so that an `[app]` entry keeps confining it. The suffix is taken
    /// off only when the file really has no name left (no links), never from a file whose name
    /// ends that way.
    static func executable(_ directory: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink(directory + "/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let suffix = " (deleted)"
        var status = stat()
        guard path.hasSuffix(suffix), stat(directory + "/exe", &status) == 0, status.st_nlink == 0 else { return path }
        return String(path.dropLast(suffix.count))
    }

    /// The command line of process `pid` (`/proc/PID/cmdline`), its arguments joined by
    /// spaces and cut at `limit` bytes, for the audit trail; nil when it cannot be read.
    static func commandLine(pid: Int32, limit: Int = 512, procRoot: String = "/proc") -> String? {
        guard let text = read("\(procRoot)/\(pid)/cmdline"), !text.isEmpty else { return nil }
        let joined = text.split(separator: "\u{0}", omittingEmptySubsequences: true).joined(separator: " ")
        guard joined.utf8.count > limit else { return joined }
        return String(decoding: joined.utf8.prefix(limit), as: UTF8.self) + "…"
    }

    /// A small text file of /proc (at most 64 KiB), or nil.
    private static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

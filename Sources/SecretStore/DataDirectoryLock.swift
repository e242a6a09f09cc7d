public import FoundationEssentials
import Glibc

/// The lock that keeps a second secretd off a data directory while one uses it.
///
/// secretd keeps what it read of its database (collections, the session keyring, item
/// descriptions) and deletes the last run's session keyring when it starts, so two daemons on
/// one file undo each other: one started on another bus (a script under `dbus-run-session`, a
/// login without `dbus-user-session`) deleted the first one's session items, and that one's
/// later writes to it failed. The lock is a POSIX write lock on `secretd.lock` in the
/// directory, held for the life of the process; the kernel drops it when the process ends, so a
/// killed daemon leaves nothing to clean up, and it names the process that holds it.
public final class DataDirectoryLock {
    /// The lock file's name inside the data directory.
    public static let fileName = "secretd.lock"

    private let descriptor: Int32

    /// Takes the lock of `directory` (created 0700 when missing; the lock file 0600), waiting
    /// up to `wait` seconds for a daemon that is stopping; `.inUse` names the process that
    /// still holds it after that.
    public init(directory: URL, wait: Double) throws(StoreError) {
        try Store.makePrivateDirectory(directory.path)
        let path = directory.appendingPathComponent(Self.fileName).path
        let file = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard file >= 0 else { throw .io("cannot open \(path): \(String(cString: strerror(errno)))") }
        fchmod(file, 0o600)
        let deadline = Date().addingTimeInterval(wait)
        while true {
            var lock = Self.wholeFile(F_WRLCK)
            if fcntl(file, F_SETLK, &lock) == 0 { break }
            let reason = errno
            guard reason == EACCES || reason == EAGAIN else {
                close(file)
                throw .io("cannot lock \(path): \(String(cString: strerror(reason)))")
            }
            guard Date() < deadline else {
                var probe = Self.wholeFile(F_WRLCK)
                let holder = fcntl(file, F_GETLK, &probe) == 0 && probe.l_type != Int16(F_UNLCK) && probe.l_pid > 0
                    ? probe.l_pid : nil
                close(file)
                throw .inUse(pid: holder)
            }
            usleep(20_000)
        }
        descriptor = file
    }

    deinit { close(descriptor) }

    /// A lock request (or probe) of `type` over the whole file.
    private static func wholeFile(_ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 0
        return lock
    }
}

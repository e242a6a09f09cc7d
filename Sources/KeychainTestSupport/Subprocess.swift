// The test support's only file that starts processes (posix_spawn), so every child starts
// with default signal handling and an empty signal mask. Foundation's Process passes on the
// spawning thread's mask, and test threads block SIGTERM: a daemon started that way can
// never be stopped.

import Glibc

/// A child process started with `posix_spawnp`.
final class Subprocess: @unchecked Sendable {
    /// The child's process id.
    let pid: pid_t
    private var status: Int32?

    /// Starts `arguments` (argv[0] looked up in `PATH`) with exactly `environment`; the child's
    /// standard input, output and error are the given descriptors.
    init(
        _ arguments: [String], environment: [String: String], input: Int32, output: Int32, error: Int32
    ) throws(HarnessError) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, error, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawnp(&child, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw HarnessError("cannot start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        pid = child
    }

    /// Whether the child has not exited yet (reaps it when it has).
    var isRunning: Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        if waitpid(pid, &raw, WNOHANG) == pid {
            status = Self.decode(raw)
            return false
        }
        return true
    }

    /// Sends `signal` to the child if it still runs.
    func send(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits for the child to exit; returns its exit status (128 + signal when killed).
    @discardableResult
    func waitForExit() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        let decoded = Self.decode(raw)
        status = decoded
        return decoded
    }

    private static func decode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }

    // MARK: - Descriptors

    /// A pipe whose ends are closed on exec (the child gets its own copy through dup2).
    static func pipe() throws(HarnessError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { throw HarnessError("pipe failed") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// Opens `path` for writing (created 0600, truncated), closed on exec.
    static func openForWriting(_ path: String) throws(HarnessError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HarnessError("cannot open \(path)") }
        return fd
    }

    /// Writes all of `bytes` to `fd`, then closes it.
    static func writeAndClose(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                break
            }
            offset += written
        }
        close(fd)
    }
}

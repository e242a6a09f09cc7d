// The test support's only file that starts processes (through ProcessSpawning), so every
// child starts with default signal handling and an empty signal mask. Foundation's Process
// passes on the spawning thread's mask, and test threads block SIGTERM: a daemon started that
// way can never be stopped.

import Glibc
import ProcessSpawning

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
        switch ProcessSpawning.spawn(
            arguments, environment: environment, descriptors: [(0, input), (1, output), (2, error)])
        {
        case .success(let child):
            pid = child
        case .failure(let failure):
            throw HarnessError("cannot start \(arguments[0]): \(failure)")
        }
    }

    /// Whether the child has not exited yet (reaps it when it has).
    var isRunning: Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        if waitpid(pid, &raw, WNOHANG) == pid {
            status = ProcessSpawning.exitStatus(raw)
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
        let decoded = ProcessSpawning.waitForExit(pid)
        status = decoded
        return decoded
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

// Starting child processes with posix_spawnp, clean of the parent's state: an empty signal
// mask, default handlers, and only the descriptors they are given. Foundation's Process passes
// on the spawning thread's mask, so a child started from a thread that blocks SIGTERM could
// never be stopped.

internal import CProcess
import Glibc

/// Starts and waits for child processes; for `secretctl login` and the test support.
public enum ProcessSpawning {
    /// Why a process could not be started.
    public struct SpawnError: Error, CustomStringConvertible {
        /// The `errno` value from posix_spawnp (`ENOENT` when the program is not found).
        public let code: Int32
        /// What `strerror` says.
        public var description: String { String(cString: strerror(code)) }
    }

    /// Signals the child gets with their default action, whatever the parent does with them.
    private static let defaultSignals = [
        SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU,
    ]

    /// Starts `arguments` (argv[0] looked up in `PATH`) with exactly `environment`. Each
    /// `(child, parent)` pair of `descriptors` gives the child `parent` as its descriptor
    /// `child` (standard input is 0); standard input, output and error not among them are the
    /// parent's, and the child has no other descriptor. Returns the child's process id.
    public static func spawn(
        _ arguments: [String], environment: [String: String], descriptors: [(child: Int32, parent: Int32)]
    ) -> Result<Int32, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (child, parent) in descriptors { posix_spawn_file_actions_adddup2(&actions, parent, child) }
        // Closing on exec is not enough: C libraries open descriptors without O_CLOEXEC
        // (libtss2's connection to a TPM simulator), and a child started by another thread
        // meanwhile would hold them open. A TPM simulator serves one connection at a time, so
        // a child keeping the last one open stalled every later TPM call.
        let given = Set(descriptors.map(\.child))
        let firstClosedOnwards = max(3, (given.max() ?? 0) + 1)
        for descriptor in 3..<firstClosedOnwards where !given.contains(descriptor) {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        posix_spawn_file_actions_addclosefrom_np(&actions, firstClosedOnwards)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in defaultSignals { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: Int32 = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        return result == 0 ? .success(pid) : .failure(SpawnError(code: result))
    }

    /// Waits for `pid` to exit; its exit status, or 128 + the signal that ended it.
    public static func waitForExit(_ pid: Int32) -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        return exitStatus(raw)
    }

    /// The exit status in a `waitpid` status word, or 128 + the signal that ended the process.
    public static func exitStatus(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}

public import Foundation

/// A long-running helper process (a bus daemon, a provider) that dies with the test process.
///
/// Each one runs under a small `/bin/sh` watchdog that ends it when the test process is gone,
/// so a crashed or killed test run never leaves daemons behind; ``stop()`` ends it earlier.
public final class SupervisedProcess: @unchecked Sendable {
    /// The watchdog's process (the helper is its only child).
    private let process: Subprocess
    /// Where the helper's standard output and error go.
    public let logURL: URL

    /// The script the watchdog runs: start "$@" in the background (an asynchronous command's
    /// standard input is /dev/null unless passed through another descriptor), end it when the
    /// test process (`$1`) is gone or when the watchdog is told to stop, and then remove the
    /// directory `$2` if one is given.
    private static let watchdog = #"""
        parent=$1; cleanup=$2; shift 2
        exec 3<&0
        "$@" <&3 3<&- &
        child=$!
        exec 3<&-
        trap 'kill -TERM $child 2>/dev/null; wait $child; exit $?' TERM INT
        while kill -0 "$parent" 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 0.2; done
        kill -TERM $child 2>/dev/null
        wait $child
        status=$?
        if [ -n "$cleanup" ] && ! kill -0 "$parent" 2>/dev/null; then sleep 0.5; rm -rf "$cleanup"; fi
        exit $status
        """#

    /// Starts `arguments` (argv[0] is looked up in `PATH`) with exactly `environment`, writing
    /// `standardInput` to it and closing its standard input afterwards. When the helper ends
    /// because the test process is gone, `removeWhenOrphaned` is deleted.
    public init(
        _ arguments: [String], environment: [String: String], standardInput: Data? = nil, logURL: URL,
        removeWhenOrphaned: URL? = nil
    ) throws {
        self.logURL = logURL
        let log = try Subprocess.openForWriting(logURL.path)
        defer { close(log) }
        let input = try Subprocess.pipe()
        defer { close(input.read) }
        process = try Subprocess(
            ["/bin/sh", "-c", Self.watchdog, "watchdog", String(getpid()), removeWhenOrphaned?.path ?? ""]
                + arguments,
            environment: environment, input: input.read, output: log, error: log)
        Subprocess.writeAndClose(input.write, Array(standardInput ?? Data()))
    }

    /// Whether the helper (its watchdog) is still running.
    public var isRunning: Bool { process.isRunning }

    /// What the helper wrote so far.
    public var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// Whether the log comes to contain `text` within `timeout` seconds: for what the process
    /// does after it answered (a re-wrap after an unlock).
    public func logs(_ text: String, within timeout: TimeInterval = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !log.contains(text) {
            guard Date() < deadline, isRunning else { return log.contains(text) }
            usleep(20_000)
        }
        return true
    }

    /// The helper's own process id (the watchdog's only child), while it runs.
    public var helperPID: pid_t? {
        (try? String(contentsOfFile: "/proc/\(process.pid)/task/\(process.pid)/children", encoding: .utf8))?
            .split(separator: " ").first.flatMap { pid_t($0) }
    }

    /// Kills the helper itself with SIGKILL (not its watchdog), as a crash would, and waits.
    public func crash() {
        if let child = helperPID { kill(child, SIGKILL) }
        process.waitForExit()
    }

    /// Waits (up to `timeout` seconds) for the helper to exit by itself; returns its exit status,
    /// or nil when it is still running.
    public func waitForExit(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else { return nil }
            usleep(10_000)
        }
        return process.waitForExit()
    }

    /// Asks the helper to end without waiting (safe while the process is exiting).
    public func signalStop() {
        process.send(SIGTERM)
    }

    /// Ends the helper with SIGTERM and waits for it (SIGKILL after `timeout` seconds).
    public func stop(timeout: TimeInterval = 5) {
        process.send(SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        process.send(SIGKILL)
        process.waitForExit()
    }
}

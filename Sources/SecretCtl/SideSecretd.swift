import FoundationEssentials
import Glibc
import Keychain
import KeychainCore
import ProcessSpawning

/// A secretd that secretctl runs for the length of one command, under a bus name of its own
/// (`secretd --bus-name`), beside the provider that owns `org.freedesktop.secrets`: it writes
/// into the user's secretd database while that provider still runs (`secretctl import
/// secret-service`). It is the secretd installed beside this secretctl, else the one on PATH.
final class SideSecretd {
    /// The bus name it owns.
    let busName: String
    private let pid: Int32
    /// The unlinked file its standard error goes to, read back when it fails.
    private let log: Int32
    private var running = true

    /// How long it may take to own its name.
    private static let startTimeout: Double = 20

    /// Variables of the environment that belong to the process systemd started, not to a child.
    private static let inheritedNot: Set<String> = ["CREDENTIALS_DIRECTORY", "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"]

    /// Starts it and waits until it owns its name.
    init() throws(CommandLineError) {
        busName = "io.github.secretd.Side_\(getpid())"
        var template = Array("\(FileManager.default.temporaryDirectory.path)/secretd-log-XXXXXX".utf8CString)
        log = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard log >= 0 else { throw .failure("cannot create a file for secretd's messages: \(String(cString: strerror(errno)))", status: .failed) }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(log, F_SETFD, FD_CLOEXEC)
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        let environment = ProcessInfo.processInfo.environment.filter { !Self.inheritedNot.contains($0.key) }
        let spawned = ProcessSpawning.spawn(
            [Self.program, "--bus-name", busName], environment: environment,
            descriptors: [(child: 0, parent: null), (child: 1, parent: null), (child: 2, parent: log)])
        switch spawned {
        case .failure(let error):
            close(log)
            throw .failure("cannot start secretd (\(Self.program)): \(error)", status: .failed)
        case .success(let pid):
            self.pid = pid
        }
        try waitUntilServing()
    }

    deinit {
        if running {
            kill(pid, SIGTERM)
            _ = ProcessSpawning.waitForExit(pid)
        }
        close(log)
    }

    /// Runs `body` with the library's calls going to this secretd.
    func call<T>(_ body: () throws(KeychainError) -> T) throws(CommandLineError) -> T {
        try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.on(busName: busName, body) }
    }

    /// Stops it (on SIGTERM it writes everything out and closes the database) and waits for it.
    func stop() throws(CommandLineError) {
        guard running else { return }
        running = false
        kill(pid, SIGTERM)
        let status = ProcessSpawning.waitForExit(pid)
        guard status == 0 else { throw .failure("secretd ended with status \(status)\(lastMessage)", status: .failed) }
    }

    /// secretd beside this program's own file, else `secretd` from PATH.
    private static var program: String {
        if let directory = OwnExecutable.directory, access(directory + "/secretd", X_OK) == 0 { return directory + "/secretd" }
        return "secretd"
    }

    /// Waits until it answers on its name; fails with its last message when it exits first.
    private func waitUntilServing() throws(CommandLineError) {
        let deadline = Date().addingTimeInterval(Self.startTimeout)
        while true {
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid {
                running = false
                throw .failure("secretd did not start\(lastMessage)", status: .failed)
            }
            do {
                try KeychainProvider.on(busName: busName) { () throws(KeychainError) in try KeychainProvider.ping() }
                return
            } catch .noProvider {
                guard Date() < deadline else {
                    throw .failure("secretd did not take the bus name \(busName) within \(Int(Self.startTimeout)) s\(lastMessage)", status: .failed)
                }
                usleep(50_000)
            } catch {
                throw CommandLineError(error)
            }
        }
    }

    /// ": " and the last line secretd wrote, without its log level; empty when it wrote none.
    private var lastMessage: String {
        let size = lseek(log, 0, SEEK_END)
        guard size > 0 else { return "" }
        let start = max(0, size - 4096)
        var bytes = [UInt8](repeating: 0, count: Int(size - start))
        let count = pread(log, &bytes, bytes.count, start)
        guard count > 0 else { return "" }
        let lines = bytes[0..<count].split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
        guard var last = lines.last else { return "" }
        if last.hasPrefix("<"), let close = last.firstIndex(of: ">") { last = String(last[last.index(after: close)...]) }
        return ": \(last)"
    }
}

// `secretctl login SERVICE [--account A] [--remember|--no-remember] [--reject-exit CODES]
// -- COMMAND [ARGS...]`: the library's login flow around a command that logs in.
//
// COMMAND gets the password on its standard input (the password, then a newline), and
// SECRETCTL_SERVICE and SECRETCTL_ACCOUNT in its environment; never on its command line.
// Exit status 0 means the password worked, one of --reject-exit's statuses (default 1) that it
// was wrong, anything else another failure. secretctl exits with COMMAND's last status.

import FoundationEssentials
import Dispatch
import KeychainCore
import Glibc
import Keychain
import ProcessSpawning
import Synchronization

enum LoginCommand: Verb {
    /// `COMMAND [ARGS...]`, every word after `--`, taken as it is.
    static let command = Positional<[String]>(
        "COMMAND [ARGS...]", help: "The command that logs in; it reads the password on standard input.", afterSeparator: true)
    /// `--account`: the account to log in as.
    static let account = LongOption<String?>(
        "account", value: "ACCOUNT", help: "Log in as this account (default: the one remembered).")
    /// `--remember`: keep a typed password that works, without asking.
    static let remember = LongOption<Bool>("remember", help: "Remember a typed password that works, without asking.")
    /// `--no-remember`: never keep a typed password.
    static let noRemember = LongOption<Bool>("no-remember", help: "Never remember a typed password, and do not ask.")
    /// `--reject-exit CODES`: COMMAND's statuses that mean a wrong password.
    static let rejectExit = LongOption<String?>(
        "reject-exit", value: "CODES", help: "COMMAND's exit statuses that mean a wrong password, comma-separated (default 1).")

    static let spec = CommandSpec(
        name: "login",
        abstract: "Run COMMAND with a remembered password on its standard input; ask for one when it is rejected.",
        arguments: [Common.service, command], options: [account, remember, noRemember, rejectExit],
        examples: [
            "secretctl login --account bob registry.example.com -- docker login -u bob --password-stdin registry.example.com",
            "secretctl login --account alice --reject-exit 1,77 mail.example.com -- ./check-mail.sh",
        ])

    /// Runs the flow for a parsed `login` command line.
    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let service = parsed[Common.service]
        let command = parsed[Self.command]
        let remember: LoginRememberPolicy
        switch (parsed[Self.remember], parsed[Self.noRemember]) {
        case (true, true): throw .usage("give --remember or --no-remember, not both", command: spec.name)
        case (true, false): remember = .always
        case (false, true): remember = .never
        case (false, false): remember = .ask
        }
        let rejections = try rejectionStatuses(parsed[Self.rejectExit] ?? "1")
        let account = parsed[Self.account]
        let keychain = try CommandLineError.keychain { () throws(KeychainError) in try Keychain(service: service) }

        let outcome = waitFor { () async -> Result<(LoginResult, Int32), KeychainError> in
            var lastStatus: Int32 = 0
            do throws(KeychainError) {
                let result = try await keychain.login(account: account, remember: remember) { credential in
                    let status = await Child.run(command, service: service, credential: credential)
                    lastStatus = status
                    if status == 0 { return .success }
                    if rejections.contains(status) { return .rejected }
                    return .failed(CommandFailed(status: status))
                }
                return .success((result, lastStatus))
            } catch {
                return .failure(error)
            }
        }
        let (result, lastStatus) = try CommandLineError.keychain { () throws(KeychainError) in try outcome.get() }

        switch result {
        case .success(let success):
            if let error = success.keychainError {
                Terminal.writeError("secretctl: logged in, but the password was not remembered: \(error)\n")
            }
        case .rejected:
            throw .failure("the password was rejected every time; nothing was remembered", status: ExitStatus(rawValue: lastStatus))
        case .failed:
            throw .silent(status: ExitStatus(rawValue: lastStatus))  // COMMAND said why
        }
    }

    /// COMMAND ended with a status that is neither success nor a rejection.
    struct CommandFailed: Error {
        var status: Int32
    }

    /// `--reject-exit`'s list: statuses from 1 to 255, separated by commas.
    static func rejectionStatuses(_ text: String) throws(CommandLineError) -> Set<Int32> {
        var statuses = Set<Int32>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let status = Int32(part.trimmingWhitespace), (1...255).contains(status) else {
                throw .usage("--reject-exit takes exit statuses from 1 to 255, separated by commas", command: spec.name)
            }
            statuses.insert(status)
        }
        return statuses
    }

    /// Runs `body` as a task and blocks this (synchronous, non-pool) thread until it ends.
    private static func waitFor<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            box.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return box.withLock { $0! }
    }
}

/// COMMAND as a child process, started with `posix_spawnp` (Foundation's `Process` passes on
/// the spawning thread's blocked signals): default signal handling, an empty signal mask, the
/// password on a pipe as its standard input, secretctl's output and error.
private enum Child {
    /// Runs `command` on a thread of its own and returns its exit status (128 + signal when it
    /// was killed; 127 when it cannot be found, 126 when it cannot be started).
    static func run(_ command: [String], service: String, credential: LoginCredential) async -> Int32 {
        await withCheckedContinuation { continuation in
            let run = { continuation.resume(returning: spawnAndWait(command, service: service, credential: credential)) }
            if !DetachedThread.start(named: "secretctl-login", run) { run() }
        }
    }

    private static func spawnAndWait(_ command: [String], service: String, credential: LoginCredential) -> Int32 {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            Terminal.writeError("secretctl: cannot create a pipe: \(String(cString: strerror(errno)))\n")
            return 126
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }  // COMMAND gets its own copy as fd 0
        let (readEnd, writeEnd) = (fds[0], fds[1])

        var environment = ProcessInfo.processInfo.environment
        environment["SECRETCTL_SERVICE"] = service
        environment["SECRETCTL_ACCOUNT"] = credential.account
        // As system(3): while COMMAND runs, Ctrl-C and Ctrl-\ are its business; secretctl waits
        // for its status. A password write to a COMMAND that exited must not kill secretctl.
        let previousInterrupt = signal(SIGINT, SIG_IGN)
        let previousQuit = signal(SIGQUIT, SIG_IGN)
        let previousPipe = signal(SIGPIPE, SIG_IGN)
        defer {
            signal(SIGINT, previousInterrupt)
            signal(SIGQUIT, previousQuit)
            signal(SIGPIPE, previousPipe)
        }

        let spawned = ProcessSpawning.spawn(command, environment: environment, descriptors: [(0, readEnd)])
        close(readEnd)
        let pid: pid_t
        switch spawned {
        case .success(let child):
            pid = child
        case .failure(let failure):
            close(writeEnd)
            Terminal.writeError("secretctl: cannot run \(command[0]): \(failure)\n")
            return failure.code == ENOENT ? 127 : 126
        }

        // Written from a thread of its own, so a COMMAND that never reads a long password
        // cannot block the wait below.
        let writer = {
            credential.withPasswordBytes { writeAll(writeEnd, $0) }
            withUnsafeBytes(of: UInt8(ascii: "\n")) { writeAll(writeEnd, $0) }
            close(writeEnd)
        }
        if !DetachedThread.start(named: "secretctl-write", writer) {
            close(writeEnd)  // no password rather than a wait that may never end
        }

        return ProcessSpawning.waitForExit(pid)
    }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }  // EPIPE: COMMAND did not read it
            offset += written
        }
    }
}

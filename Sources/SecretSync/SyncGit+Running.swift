public import FoundationEssentials
import Glibc
import ProcessSpawning

/// Running the user's `git` in the clone, with a time limit, no terminal and git's messages
/// in English.
extension SyncGit {
    /// The environment git runs in: the user's, so their ssh agent, keys and helpers apply,
    /// with no question on a terminal and git's messages in English.
    private static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["GIT_TERMINAL_PROMPT"] = "0"
        // A host that does not answer fails after 15 s, one that stops answering after 45 s.
        environment["GIT_SSH_COMMAND"] = environment["GIT_SSH_COMMAND"]
            ?? "ssh -o BatchMode=yes -o ConnectTimeout=15 -o ServerAliveInterval=15 -o ServerAliveCountMax=3"
        environment["LC_ALL"] = "C"
        return environment
    }

    /// Runs git; what it printed (both streams); throws when it fails.
    @discardableResult
    func git(_ arguments: [String], input: [UInt8]? = nil) throws(SyncError) -> String {
        let (status, output, errors) = try runBytes(arguments, input: input)
        guard status == 0 else { throw failure(arguments, errors.isEmpty ? output : errors) }
        return String(decoding: output + errors, as: UTF8.self)
    }

    /// Runs git; what it printed on its standard output; throws when it fails.
    func gitBytes(_ arguments: [String], input: [UInt8]? = nil) throws(SyncError) -> [UInt8] {
        let (status, output, errors) = try runBytes(arguments, input: input)
        guard status == 0 else { throw failure(arguments, errors) }
        return output
    }

    /// Whether git succeeds.
    func gitSucceeds(_ arguments: [String]) throws(SyncError) -> Bool { try runBytes(arguments, input: nil).status == 0 }

    /// Runs git; its exit status and what it printed (both streams).
    func run(_ arguments: [String]) throws(SyncError) -> (status: Int32, output: String) {
        let (status, output, errors) = try runBytes(arguments, input: nil)
        return (status, String(decoding: output + errors, as: UTF8.self))
    }

    private func failure(_ arguments: [String], _ output: [UInt8]) -> SyncError {
        .transport("git \(arguments.first ?? "") failed for the remote \(Self.shown(remote)): \(lastLines(String(decoding: output, as: UTF8.self)))")
    }

    /// Runs `git -C directory arguments` with `input` (nothing when nil) on its standard input;
    /// its exit status, standard output and standard error.
    private func runBytes(_ arguments: [String], input: [UInt8]?) throws(SyncError) -> (status: Int32, output: [UInt8], errors: [UInt8]) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw .transport("cannot make a pipe for git") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // the child gets its copies by dup2
        // Standard input and error are unnamed files in the clone: nothing to write or read
        // beside the child while it runs, so neither side waits on the other.
        let standardInput: Int32
        let standardError: Int32
        do {
            standardInput = try input.map { bytes throws(SyncError) in try scratchFile(holding: bytes) } ?? open("/dev/null", O_RDONLY | O_CLOEXEC)
            standardError = try scratchFile(holding: [])
        } catch {
            close(ends[0])
            close(ends[1])
            throw error
        }
        defer { close(standardError) }
        // coreutils' timeout runs git in a process group of its own and kills the whole group
        // (ssh included) when the time is up; it then exits with 124 (137 after SIGKILL).
        let seconds = String(max(1, Int(timeout.rounded(.up))))
        let spawned = ProcessSpawning.spawn(
            ["timeout", "--kill-after=5", seconds, "git", "-C", directory.path] + arguments, environment: Self.environment,
            descriptors: [(0, standardInput), (1, ends[1]), (2, standardError)])
        close(ends[1])
        close(standardInput)
        guard case .success(let pid) = spawned else {
            close(ends[0])
            throw .transport("cannot run git (is it installed?)")
        }
        let output = Self.readAll(ends[0])
        close(ends[0])
        let status = ProcessSpawning.waitForExit(pid)
        if status == 124 || status == 137 {
            throw .transport("git \(arguments.first ?? "") did not finish within \(seconds) s for the remote \(Self.shown(remote)); it was stopped")
        }
        lseek(standardError, 0, SEEK_SET)
        return (status, output, Self.readAll(standardError))
    }

    /// An unnamed file (made in the clone's folder, or the system's when there is none yet,
    /// and unlinked at once) holding `bytes`, read from its start.
    private func scratchFile(holding bytes: [UInt8]) throws(SyncError) -> Int32 {
        let folder = FileManager.default.fileExists(atPath: directory.path) ? directory.path : "/tmp"
        var template = Array("\(folder)/.secretd-git-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw .transport("cannot make a scratch file in \(folder): \(String(cString: strerror(errno)))") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                close(descriptor)
                throw .transport("cannot write a scratch file in \(folder): \(String(cString: strerror(errno)))")
            }
            written += count
        }
        lseek(descriptor, 0, SEEK_SET)
        return descriptor
    }

    /// Everything left to read from `descriptor`.
    private static func readAll(_ descriptor: Int32) -> [UInt8] {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { output += buffer[0..<count] } else if count == 0 || errno != EINTR { break }
        }
        return output
    }

    func lastLines(_ output: String) -> String {
        let shown = Self.shown(remote)
        let text = shown == remote ? output : output.replacing(remote, with: shown)
        return text.split(separator: "\n").suffix(3).joined(separator: " / ")
    }
}

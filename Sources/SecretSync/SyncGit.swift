public import FoundationEssentials
import Glibc
import KeychainCore
import ProcessSpawning

/// The sync repository's transport: a clone of the user's git remote, driven through the
/// user's own `git`, so their ssh keys, known hosts and credential helpers apply. git carries
/// files and nothing else: each round makes the working tree exactly the remote's branch,
/// the caller (which keeps the local truth) writes what should change, and it is committed
/// and pushed; a push the remote refuses because another machine pushed first is reported, and
/// the caller starts the round again.
///
/// git never asks anything on a terminal (`GIT_TERMINAL_PROMPT=0`, ssh in batch mode), so a
/// remote that wants a password fails at once with git's own message instead of hanging.
public final class SyncGit: Sendable {
    /// The working clone (created 0700).
    public let directory: URL
    /// The remote, as git takes it: a path, `ssh://…`, `user@host:path`, `https://…`.
    public let remote: String
    /// The branch that holds the vault.
    public let branch: String
    /// How long one git command may take (seconds) before it is killed, with the ssh or helper
    /// it started: a remote that accepts a connection and never answers must not hold a round
    /// (and the keyring's other sync operations) for ever.
    public let timeout: Double

    /// What a publish did.
    public enum Publication: Equatable, Sendable {
        /// The changes are on the remote.
        case pushed
        /// There was nothing to commit.
        case unchanged
        /// The remote has commits this clone has not seen: synchronize and try again.
        case rejected
    }

    /// `remote` as messages and logs show it: a password in a URL (`https://user:token@host/…`)
    /// is left out.
    public static func shown(_ remote: String) -> String {
        guard let scheme = remote.firstRange(of: "://"), let at = remote[scheme.upperBound...].firstIndex(of: "@"),
            let colon = remote[scheme.upperBound..<at].firstIndex(of: ":"),
            !remote[scheme.upperBound..<at].contains("/")
        else { return remote }
        return String(remote[..<colon]) + ":…" + String(remote[at...])
    }

    /// A clone of `remote` kept in `directory`, on `branch`; each git command is killed after
    /// `timeout` seconds.
    public init(directory: URL, remote: String, branch: String = "main", timeout: Double = 120) {
        self.directory = directory
        self.remote = remote
        self.branch = branch
        self.timeout = timeout
    }

    /// Makes the working tree the remote branch as it is now (empty when the remote has no
    /// such branch yet), cloning first when there is no clone. Local changes not published are
    /// dropped: the caller writes them again.
    public func synchronize() throws(SyncError) {
        // A clone whose own git commands fail (damaged files, a half-written index) is made
        // again from the remote; a failing fetch (the network, the remote) is reported as it is.
        do {
            try prepareClone()
        } catch {
            try startOver()
        }
        try git(["fetch", "--quiet", "--prune", "origin"])
        do {
            try checkOutRemoteBranch()
        } catch {
            try startOver()
            try git(["fetch", "--quiet", "--prune", "origin"])
            try checkOutRemoteBranch()
        }
    }

    /// Removes the clone and makes an empty one.
    private func startOver() throws(SyncError) {
        try? FileManager.default.removeItem(at: directory)
        try prepareClone()
    }

    /// Makes the clone if there is none, and points it at ``remote``.
    private func prepareClone() throws(SyncError) {
        if !FileManager.default.fileExists(atPath: directory.appendingPathComponent(".git").path) {
            try Self.makeFolder(directory, private: true)
            try git(["init", "--quiet", "--initial-branch", branch])
            try git(["remote", "add", "origin", remote])
        } else {
            // Only this process uses the clone, one operation at a time: a lock file left behind
            // is from one that was killed.
            unlink(directory.appendingPathComponent(".git/index.lock").path)
            try git(["remote", "set-url", "origin", remote])
        }
    }

    /// Makes the working tree the fetched remote branch (empty when there is none yet).
    private func checkOutRemoteBranch() throws(SyncError) {
        if try gitSucceeds(["rev-parse", "--verify", "--quiet", "refs/remotes/origin/\(branch)"]) {
            try git(["checkout", "--quiet", "--force", "-B", branch, "refs/remotes/origin/\(branch)"])
            try git(["reset", "--quiet", "--hard", "refs/remotes/origin/\(branch)"])
        } else {
            // An empty remote: start the branch with no commit, and no files.
            try git(["checkout", "--quiet", "--orphan", "\(branch)-new-\(getpid())"])
            _ = try? git(["branch", "--quiet", "-D", branch])
            try git(["branch", "--quiet", "-m", branch])
            try git(["rm", "-r", "--quiet", "--cached", "--ignore-unmatch", "."])
        }
        try git(["clean", "--quiet", "-d", "-x", "--force"])
    }

    /// The files directly in `folder` of the working tree, by name; only those `named` when
    /// given (a name with no file is left out).
    public func files(in folder: String, named names: Set<String>? = nil) -> [String: [UInt8]] {
        let url = directory.appendingPathComponent(folder)
        var found: [String: [UInt8]] = [:]
        for name in names.map(Array.init) ?? listing(of: url) where !name.hasPrefix(".") && !name.contains("/") {
            let path = url.appendingPathComponent(name).path
            guard Self.size(of: path) <= Self.largestFile else { continue }
            if let data = FileManager.default.contents(atPath: path) { found[name] = Array(data) }
        }
        return found
    }

    /// The files of `folder` (only those `named` when given) larger than any file of the vault
    /// can be (``largestFile``), which ``files(in:named:)`` leaves out unread: whoever can push
    /// to the remote must not make secretd read a gigabyte.
    public func oversizedFiles(in folder: String, named names: Set<String>? = nil) -> [String] {
        let url = directory.appendingPathComponent(folder)
        return (names.map(Array.init) ?? listing(of: url))
            .filter { !$0.hasPrefix(".") && !$0.contains("/") && Self.size(of: url.appendingPathComponent($0).path) > Self.largestFile }.sorted()
    }

    private func listing(of url: URL) -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] }

    /// The commit the working tree is at (hex); nil when the branch has none yet.
    public func head() throws(SyncError) -> String? {
        let (status, output) = try run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        return status == 0 ? output.split(whereSeparator: \.isWhitespace).first.map(String.init) : nil
    }

    /// The names of the files directly in `folder` that differ between `commit` and the working
    /// tree's commit (added, changed or removed), as git's trees tell it without reading the
    /// files; nil when `commit` is not in the clone or is not an ancestor of it (a remote whose
    /// history was rewritten): then the caller reads every file.
    public func changedFiles(in folder: String, since commit: String) throws(SyncError) -> Set<String>? {
        // merge-base fails for a commit the clone does not have as for one that is no ancestor.
        guard !commit.isEmpty, commit.allSatisfy(\.isHexDigit), try gitSucceeds(["merge-base", "--is-ancestor", commit, "HEAD"])
        else { return nil }
        let output = try git(["diff", "--name-only", "--no-renames", "-z", commit, "HEAD", "--", folder])
        let prefix = folder + "/"
        return Set(output.split(separator: "\0").compactMap { path in
            path.hasPrefix(prefix) && !path.dropFirst(prefix.count).contains("/") ? String(path.dropFirst(prefix.count)) : nil
        })
    }

    /// The largest file the vault holds: an item with the largest secret, label and attributes
    /// secretd takes, sealed.
    public static let largestFile = KeychainLimits.secretSize + (KeychainLimits.attributeCount * 2 + 1) * KeychainLimits.textSize + 4096

    private static func size(of path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Writes `bytes` to `path` (relative to the working tree), creating its folder.
    public func write(_ bytes: [UInt8], to path: String) throws(SyncError) {
        let url = directory.appendingPathComponent(path)
        try Self.makeFolder(url.deletingLastPathComponent(), private: false)
        guard FileManager.default.createFile(atPath: url.path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
            throw .transport("cannot write \(path) in \(directory.path)")
        }
    }

    /// Removes `path` from the working tree; nothing when it is not there.
    public func remove(_ path: String) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(path))
    }

    /// Commits every change of the working tree and pushes it.
    public func publish(message: String) throws(SyncError) -> Publication {
        try git(["add", "--all"])
        if try gitSucceeds(["diff", "--cached", "--quiet"]), try gitSucceeds(["rev-parse", "--verify", "--quiet", "HEAD"]) {
            return .unchanged
        }
        try git(["-c", "user.name=secretd", "-c", "user.email=secretd@localhost", "-c", "commit.gpgsign=false",
                 "commit", "--quiet", "--allow-empty", "--no-verify", "-m", message])
        let (status, output) = try run(["push", "--quiet", "--porcelain", "--no-verify", "origin", "HEAD:refs/heads/\(branch)"])
        if status == 0 { return .pushed }
        if Self.anotherPushFirst.contains(where: output.contains) { return .rejected }
        throw .transport("git push to \(Self.shown(remote)) failed: \(lastLines(output))")
    }

    /// What git prints when a push lost to another machine's: the branch moved on
    /// (`[rejected]`), or the remote was updating it at that moment (`[remote rejected]
    /// (failed to update ref)`, "cannot lock ref"). Any other refusal (a hook, permissions) is
    /// an error.
    private static let anotherPushFirst = [
        "[rejected]", "non-fast-forward", "fetch first", "failed to update ref", "cannot lock ref", "incorrect old value",
    ]

    // MARK: - Running git

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

    @discardableResult
    private func git(_ arguments: [String]) throws(SyncError) -> String {
        let (status, output) = try run(arguments)
        guard status == 0 else {
            throw .transport("git \(arguments.first ?? "") failed (\(status)) for the remote \(Self.shown(remote)): \(lastLines(output))")
        }
        return output
    }

    private func gitSucceeds(_ arguments: [String]) throws(SyncError) -> Bool { try run(arguments).status == 0 }

    /// Runs `git -C directory arguments`; its exit status and what it printed (both streams).
    private func run(_ arguments: [String]) throws(SyncError) -> (status: Int32, output: String) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw .transport("cannot make a pipe for git") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // the child gets its copies by dup2
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        // coreutils' timeout runs git in a process group of its own and kills the whole group
        // (ssh included) when the time is up; it then exits with 124 (137 after SIGKILL).
        let seconds = String(max(1, Int(timeout.rounded(.up))))
        let spawned = ProcessSpawning.spawn(
            ["timeout", "--kill-after=5", seconds, "git", "-C", directory.path] + arguments, environment: Self.environment,
            descriptors: [(0, null), (1, ends[1]), (2, ends[1])])
        close(ends[1])
        close(null)
        guard case .success(let pid) = spawned else {
            close(ends[0])
            throw .transport("cannot run git (is it installed?)")
        }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if count > 0 { output += buffer[0..<count] } else if count == 0 || errno != EINTR { break }
        }
        close(ends[0])
        let status = ProcessSpawning.waitForExit(pid)
        if status == 124 || status == 137 {
            throw .transport("git \(arguments.first ?? "") did not finish within \(seconds) s for the remote \(Self.shown(remote)); it was stopped")
        }
        return (status, String(decoding: output, as: UTF8.self))
    }

    private static func makeFolder(_ url: URL, private isPrivate: Bool) throws(SyncError) {
        do {
            try FileManager.default.createDirectory(
                at: url, withIntermediateDirectories: true, attributes: isPrivate ? [.posixPermissions: 0o700] : nil)
        } catch {
            throw .transport("cannot create \(url.path)")
        }
    }

    private func lastLines(_ output: String) -> String {
        let shown = Self.shown(remote)
        let text = shown == remote ? output : output.replacing(remote, with: shown)
        return text.split(separator: "\n").suffix(3).joined(separator: " / ")
    }
}


public import FoundationEssentials
import Glibc
import KeychainCore
import Synchronization

/// The sync repository's transport: a clone of the user's git remote, driven through the
/// user's own `git`, so their ssh keys, known hosts and credential helpers apply. git carries
/// files and nothing else. Each round starts from the remote's branch as it is
/// (``synchronize()``); the caller (which keeps the local truth) reads the files it needs and
/// writes what should change; ``publish(message:)`` commits the changes and pushes them. A push
/// the remote refuses because another machine pushed first is reported, and the caller starts
/// the round again.
///
/// The clone has no working tree: files are read from git's objects (`git cat-file`), and a
/// publish writes one commit with `git fast-import`, so a first publish of many items makes one
/// pack instead of a file and a loose object per item, and a round costs what it reads and
/// writes, not what the branch holds.
///
/// git never asks anything on a terminal (`GIT_TERMINAL_PROMPT=0`, ssh in batch mode), so a
/// remote that wants a password fails at once with git's own message instead of hanging.
public final class SyncGit: Sendable {
    /// The clone (created 0700; git's files are in its `.git` folder).
    public let directory: URL
    /// The remote, as git takes it: a path, `ssh://…`, `user@host:path`, `https://…`.
    public let remote: String
    /// The branch that holds the vault.
    public let branch: String
    /// How long one git command may take (seconds) before it is killed, with the ssh or helper
    /// it started: a remote that accepts a connection and never answers must not hold a round
    /// (and the keyring's other sync operations) for ever.
    public let timeout: Double
    /// How many KiB of loose objects the clone may gather before a round packs them.
    public let looseLimitKiB: Int

    /// What a publish did.
    public enum Publication: Equatable, Sendable {
        /// The changes are on the remote.
        case pushed
        /// There was nothing to commit.
        case unchanged
        /// The remote has commits this clone has not seen: synchronize and try again.
        case rejected
    }

    /// One file of the branch: git's object id and its size in bytes.
    struct Blob: Sendable {
        let id: String
        let size: Int
    }

    /// A change made since the last ``synchronize()``, not yet on the remote.
    enum Change: Sendable {
        case write([UInt8])
        case remove
    }

    /// What the clone knows between calls: the commit the round started from, the changes
    /// written since, and the folders of that commit listed so far.
    struct State: Sendable {
        /// The commit of the remote's branch the round started from; nil: the branch has none.
        var tip: String?
        /// Path → change, written since ``synchronize()``.
        var staged: [String: Change] = [:]
        /// Folder → name → file, for the folders under ``listedTops``.
        var listed: [String: [String: Blob]] = [:]
        /// The top-level folders (`.`: the files at the top) listed whole.
        var listedTops: Set<String> = []
    }

    let state = Mutex(State())

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
    /// `timeout` seconds; loose objects past `looseLimitKiB` are packed (``compact()``).
    public init(directory: URL, remote: String, branch: String = "main", timeout: Double = 120, looseLimitKiB: Int = 32 * 1024) {
        self.directory = directory
        self.remote = remote
        self.branch = branch
        self.timeout = timeout
        self.looseLimitKiB = looseLimitKiB
    }

    /// Starts a round from the remote branch as it is now (no files when the remote has no
    /// such branch yet), cloning first when there is no clone. Changes not published are
    /// dropped: the caller writes them again.
    public func synchronize() throws(SyncError) {
        // A clone whose own git commands fail (damaged files) is made again from the remote; a
        // failing fetch (the network, the remote) is reported as it is.
        do {
            try prepareClone()
        } catch {
            try startOver()
        }
        try git(["fetch", "--quiet", "--prune", "origin"])
        do {
            try adoptRemoteBranch()
        } catch {
            try startOver()
            try git(["fetch", "--quiet", "--prune", "origin"])
            try adoptRemoteBranch()
        }
        compact()
    }

    /// Packs the clone's loose objects once they pass ``looseLimitKiB``. Every commit writes a
    /// new tree of the items folder (about 6 MB at 100,000 items, 3 MB loose), and so does every
    /// commit fetched; git's own `gc --auto` counts loose objects, not their size, and would let
    /// gigabytes gather first. A repack deltas those trees against each other. Failing, it
    /// changes nothing: the next round tries again.
    func compact() {
        guard let counts = try? git(["count-objects", "-v"]),
            let line = counts.split(separator: "\n").first(where: { $0.hasPrefix("size: ") }),
            let loose = Int(line.dropFirst("size: ".count)), loose > looseLimitKiB
        else { return }
        _ = try? git(["repack", "-A", "-d", "-q"])
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
            for lock in ["index.lock", "packed-refs.lock", "refs/heads/\(branch).lock", "refs/remotes/origin/\(branch).lock"] {
                unlink(directory.appendingPathComponent(".git/\(lock)").path)
            }
            // A clone from before the working tree was given up: its files and index go.
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where name != ".git" {
                try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
            }
            unlink(directory.appendingPathComponent(".git/index").path)
            try git(["remote", "set-url", "origin", remote])
        }
    }

    /// Makes the local branch the fetched remote branch (none when the remote has none yet),
    /// and forgets what was written or listed before.
    private func adoptRemoteBranch() throws(SyncError) {
        let tip = try commit(of: "refs/remotes/origin/\(branch)")
        if let tip {
            try git(["update-ref", "refs/heads/\(branch)", tip])
        } else {
            try git(["update-ref", "-d", "refs/heads/\(branch)"])
        }
        state.withLock { $0 = State(tip: tip) }
    }

    /// The files directly in `folder` (`.`: at the top) of the branch with the changes written
    /// since, by name; only those `named` when given (a name with no file is left out). Files
    /// larger than ``largestFile`` are left out unread (``oversizedFiles(in:named:)``).
    public func files(in folder: String, named names: Set<String>? = nil) throws(SyncError) -> [String: [UInt8]] {
        let folder = Self.normalized(folder)
        let blobs = try committedFiles(in: folder, named: names)
        let staged = stagedChanges(in: folder, named: names)
        let wanted = blobs.filter { $0.value.size <= Self.largestFile && staged[$0.key] == nil }
        let contents = try readBlobs(Set(wanted.values.map(\.id)))
        var found: [String: [UInt8]] = [:]
        for (name, blob) in wanted {
            guard let bytes = contents[blob.id] else { throw .transport("git lost the object of \(folder)/\(name) in \(directory.path)") }
            found[name] = bytes
        }
        for (name, change) in staged {
            if case .write(let bytes) = change { found[name] = bytes }
        }
        return found
    }

    /// The files of `folder` (only those `named` when given) larger than any file of the vault
    /// can be (``largestFile``), which ``files(in:named:)`` leaves out unread: whoever can push
    /// to the remote must not make secretd read a gigabyte.
    public func oversizedFiles(in folder: String, named names: Set<String>? = nil) throws(SyncError) -> [String] {
        let folder = Self.normalized(folder)
        let staged = stagedChanges(in: folder, named: names)
        return try committedFiles(in: folder, named: names).filter { $0.value.size > Self.largestFile && staged[$0.key] == nil }
            .keys.sorted()
    }

    /// The commit the round started from, or the one it published (hex); nil when the branch
    /// has none yet.
    public func head() throws(SyncError) -> String? { state.withLock { $0.tip } }

    /// The names of the files directly in `folder` that differ between `commit` and
    /// ``head()`` (added, changed or removed), as git's trees tell it without reading the files;
    /// nil when `commit` is not in the clone or is not an ancestor of the head (a remote whose
    /// history was rewritten): then the caller reads every file.
    public func changedFiles(in folder: String, since commit: String) throws(SyncError) -> Set<String>? {
        // merge-base fails for a commit the clone does not have as for one that is no ancestor.
        guard let tip = try head(), !commit.isEmpty, commit.allSatisfy(\.isHexDigit),
            try gitSucceeds(["merge-base", "--is-ancestor", commit, tip])
        else { return nil }
        let folder = Self.normalized(folder)
        let output = try git(["diff", "--name-only", "--no-renames", "-z", commit, tip, "--", folder])
        let prefix = folder + "/"
        return Set(output.split(separator: "\0").compactMap { path in
            path.hasPrefix(prefix) && !path.dropFirst(prefix.count).contains("/") ? String(path.dropFirst(prefix.count)) : nil
        })
    }

    /// The largest file the vault holds: an item with the largest secret, label and attributes
    /// secretd takes, sealed.
    public static let largestFile = KeychainLimits.secretSize + (KeychainLimits.attributeCount * 2 + 1) * KeychainLimits.textSize + 4096

    /// Sets `path` (from the top of the branch: `folder/name`) to `bytes` in the next publish.
    public func write(_ bytes: [UInt8], to path: String) throws(SyncError) {
        guard Self.isPlainPath(path) else { throw .transport("cannot write \(path) in \(directory.path): not a plain path") }
        state.withLock { $0.staged[path] = .write(bytes) }
    }

    /// Removes `path` in the next publish; nothing when it is not there.
    public func remove(_ path: String) {
        guard Self.isPlainPath(path) else { return }
        state.withLock { $0.staged[path] = .remove }
    }

    /// Commits the changes written since ``synchronize()`` on the branch and pushes them.
    public func publish(message: String) throws(SyncError) -> Publication {
        let (tip, staged) = state.withLock { ($0.tip, $0.staged) }
        if staged.isEmpty, tip != nil { return .unchanged }
        try git(["fast-import", "--quiet", "--force"], input: Self.fastImportStream(
            branch: branch, parent: tip, message: message, changes: staged, time: Int(Glibc.time(nil))))
        guard let commit = try commit(of: "refs/heads/\(branch)") else {
            throw .transport("git fast-import made no commit in \(directory.path)")
        }
        // Writes that change nothing (the same bytes again) make no commit.
        if let tip {
            let trees = try git(["rev-parse", "\(commit)^{tree}", "\(tip)^{tree}"]).split(whereSeparator: \.isWhitespace)
            if trees.count == 2, trees[0] == trees[1] {
                try git(["update-ref", "refs/heads/\(branch)", tip])
                state.withLock { $0.staged = [:] }
                return .unchanged
            }
        }
        let (pushed, pushOutput) = try run(["push", "--quiet", "--porcelain", "--no-verify", "origin", "refs/heads/\(branch):refs/heads/\(branch)"])
        if pushed == 0 {
            state.withLock { $0 = State(tip: commit) }
            return .pushed
        }
        if Self.anotherPushFirst.contains(where: pushOutput.contains) { return .rejected }
        throw .transport("git push to \(Self.shown(remote)) failed: \(lastLines(pushOutput))")
    }

    /// What git prints when a push lost to another machine's: the branch moved on
    /// (`[rejected]`), or the remote was updating it at that moment (`[remote rejected]
    /// (failed to update ref)`, "cannot lock ref"). Any other refusal (a hook, permissions) is
    /// an error.
    private static let anotherPushFirst = [
        "[rejected]", "non-fast-forward", "fetch first", "failed to update ref", "cannot lock ref", "incorrect old value",
    ]

    /// The commit `ref` names (hex); nil when it names none.
    private func commit(of ref: String) throws(SyncError) -> String? {
        let (status, output) = try run(["rev-parse", "--verify", "--quiet", "\(ref)^{commit}"])
        return status == 0 ? output.split(whereSeparator: \.isWhitespace).first.map(String.init) : nil
    }

    // MARK: - Paths

    /// `folder` without a trailing slash; `.` for the top.
    static func normalized(_ folder: String) -> String {
        var folder = folder
        while folder.hasSuffix("/") { folder.removeLast() }
        return folder.isEmpty ? "." : folder
    }

    /// A path git and fast-import take as it is: folders and a name of letters, digits, `-`,
    /// `_` and `.`, none of them empty or `.`/`..`.
    static func isPlainPath(_ path: String) -> Bool {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        return !parts.isEmpty && parts.allSatisfy { part in
            !part.isEmpty && part != "." && part != ".." && !part.hasPrefix(".")
                && part.utf8.allSatisfy { $0 < 0x80 && (isalnum(Int32($0)) != 0 || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")) }
        }
    }

    /// The changes written since ``synchronize()`` directly in `folder`, by name.
    private func stagedChanges(in folder: String, named names: Set<String>?) -> [String: Change] {
        let prefix = folder == "." ? "" : folder + "/"
        return state.withLock { state in
            var found: [String: Change] = [:]
            for (path, change) in state.staged where path.hasPrefix(prefix) {
                let name = String(path.dropFirst(prefix.count))
                if !name.contains("/"), names?.contains(name) ?? true { found[name] = change }
            }
            return found
        }
    }

    private static func makeFolder(_ url: URL, private isPrivate: Bool) throws(SyncError) {
        do {
            try FileManager.default.createDirectory(
                at: url, withIntermediateDirectories: true, attributes: isPrivate ? [.posixPermissions: 0o700] : nil)
        } catch {
            throw .transport("cannot create \(url.path)")
        }
    }
}

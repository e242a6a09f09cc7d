import KeychainCore
import FoundationEssentials
import Glibc
import CProcess  // struct stat, as the modules that include <sys/stat.h> first declare it

extension RunScope.NamespaceID {
    /// The namespace whose `/proc/PID/ns/pid` file has `status`.
    init(_ status: stat) { self.init(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)) }
}

/// The `secretctl run` scopes in force, and which one a process is in: the scope whose PID
/// namespace is the process's own or one it is nested in. A process cannot leave its PID
/// namespace, whatever it does with its cgroup, session or bus connections.
final class RunScopes {
    private var scopes: [RunScope] = []
    /// Where the scopes in force are kept for a secretd started again (nil: nowhere).
    private var stateFile: URL?

    /// Keeps the scopes in force in `file` from now on, and takes back those it holds whose
    /// namespace still runs (secretd was started again during them).
    func keep(in file: URL) {
        stateFile = file
        guard let data = FileManager.default.contents(atPath: file.path) else { return }
        let records = (try? JSONDecoder().decode([RunScope.Record].self, from: data)) ?? []
        for record in records {
            let scope = RunScope(record)
            guard scope.isAlive, Self.namespace(of: record.rootPid) == record.namespace else { continue }
            scopes.append(scope)
            Log.info("the run \(scope.name) goes on from before secretd started")
        }
        save()
    }

    /// `ioctl(NS_GET_PARENT)`: the parent of a PID namespace (linux/nsfs.h).
    private static let namespaceParent = UInt((0xb7 << 8) | 2)

    /// Begins a scope for the PID namespace of `pid`, which must be a process `owner` (the
    /// caller, process `ownerPid`) started, in a namespace of its own.
    func begin(
        name: String, allowances: [RunScope.Allowance], group: String?, pid: Int32, owner: String, ownerPid: Int32
    ) -> Result<RunScope, SecretServiceError> {
        guard pid > 1, Self.descends(pid, from: ownerPid) else {
            return .failure(.forbidden("process \(pid) was not started by the caller"))
        }
        guard let namespace = Self.namespace(of: pid) else {
            return .failure(.failed("cannot read the PID namespace of process \(pid)"))
        }
        guard namespace != Self.namespace(of: getpid()), namespace != Self.namespace(of: ownerPid) else {
            return .failure(.invalidArgs("process \(pid) has no PID namespace of its own (start it with bwrap --unshare-pid)"))
        }
        pruneEnded()
        guard !scopes.contains(where: { $0.name == name }) else { return .failure(.invalidArgs("a run named “\(name)” is in progress")) }
        guard let started = CallerIdentity.startTime("/proc/\(pid)") else {
            return .failure(.failed("cannot read the start time of process \(pid)"))
        }
        let scope = RunScope(name: name, allowances: allowances, group: group, namespace: namespace, root: (pid, started), owner: owner)
        scopes.append(scope)
        save()
        Log.info("began the run \(name) for \(owner): \(allowances.count) allowance\(allowances.count == 1 ? "" : "s")"
                 + (group.map { ", the access group \($0)" } ?? ""))
        return .success(scope)
    }

    /// Ends the scope `name` of `owner`; false when it has none of that name.
    @discardableResult
    func end(_ name: String, of owner: String) -> Bool {
        guard let index = scopes.firstIndex(where: { $0.name == name && $0.owner == owner }) else { return false }
        scopes[index].ended = true
        scopes.remove(at: index)
        save()
        Log.info("ended the run \(name)")
        return true
    }

    /// Ends every scope of `owner` (it left the bus).
    func endAll(of owner: String) {
        for scope in scopes where scope.owner == owner { end(scope.name, of: owner) }
    }

    /// The scope process `pid` is in, if any.
    func scope(containing pid: Int32) -> RunScope? {
        guard !scopes.isEmpty else { return nil }
        var descriptor = open("/proc/\(pid)/ns/pid", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        // Up the chain of parents; at most 32 levels, as the kernel allows.
        defer { close(descriptor) }
        for _ in 0..<33 {
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { return nil }
            let namespace = RunScope.NamespaceID(status)
            if let scope = scopes.first(where: { $0.namespace == namespace }) { return scope }
            let parent = ioctl(descriptor, Self.namespaceParent)
            guard parent >= 0 else { return nil }  // the initial namespace: no scope's
            close(descriptor)
            descriptor = parent
        }
        return nil
    }

    /// Ends the scopes whose namespace's first process is gone (the owner left without
    /// saying, or secretd was not running when it did).
    private func pruneEnded() {
        for scope in scopes where !scope.isAlive { end(scope.name, of: scope.owner) }
    }

    /// Writes the scopes in force to the state file (0600), or removes it when there is none.
    private func save() {
        guard let stateFile else { return }
        if scopes.isEmpty {
            unlink(stateFile.path)
            return
        }
        guard let data = try? JSONEncoder().encode(scopes.map(\.record)),
            PrivateFile.replace(stateFile, with: Array(data)) == nil
        else { return Log.warning("cannot keep the runs in force in \(stateFile.path)") }
    }

    /// The PID namespace of `pid`.
    private static func namespace(of pid: Int32) -> RunScope.NamespaceID? {
        var status = stat()
        guard stat("/proc/\(pid)/ns/pid", &status) == 0 else { return nil }
        return RunScope.NamespaceID(status)
    }

    /// Whether `ancestor` is `pid`'s parent, or its parent's, within a few generations.
    private static func descends(_ pid: Int32, from ancestor: Int32) -> Bool {
        var current = pid
        for _ in 0..<8 {
            guard let parent = ProcessStatus.value("PPid", of: current).flatMap({ Int32($0) }) else { return false }
            if parent == ancestor { return true }
            if parent <= 1 { return false }
            current = parent
        }
        return false
    }
}

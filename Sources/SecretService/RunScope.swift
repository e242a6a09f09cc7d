import KeychainCore
import SecretStore

/// One `secretctl run`: the processes of a PID namespace that secretctl made for COMMAND (and
/// every namespace nested in it: containers and sandboxes started from COMMAND) see only the
/// items the run allows, and appear in the audit trail as `run:NAME` (secretd(1), SCOPED RUNS).
final class RunScope {
    /// One `--allow SERVICE[:ACCOUNT]`.
    struct Allowance: Equatable, Codable {
        /// The item's service: its `service` attribute, or `server` (git's helper and
        /// libsecret's network passwords).
        var service: String
        /// Its account (`account`, Python keyring's `username`, or git's `user`); nil: any.
        var account: String?

        /// The attribute names a service is matched under.
        static let serviceNames = ["service", "server"]
        /// The attribute names an account is matched under.
        static let accountNames = ["account", "username", "user"]

        /// Whether `attributes` name this service (and account).
        func matches(_ attributes: [String: String]) -> Bool {
            guard Self.serviceNames.contains(where: { attributes[$0] == service }) else { return false }
            guard let account else { return true }
            return Self.accountNames.contains { attributes[$0] == account }
        }

        /// The searches that find exactly the items this allows.
        var searches: [[String: String]] {
            Self.serviceNames.flatMap { serviceName -> [[String: String]] in
                guard let account else { return [[serviceName: service]] }
                return Self.accountNames.map { [serviceName: service, $0: account] }
            }
        }
    }

    /// Its name, as the audit trail shows it (`run:NAME`).
    let name: String
    /// What it may read, change and create.
    let allowances: [Allowance]
    /// The access group whose items it may read, change and create, if any.
    let group: String?
    /// The namespace: device and inode of `/proc/PID/ns/pid`.
    let namespace: NamespaceID
    /// The namespace's first process (bwrap's init) and when it started (clock ticks since
    /// boot): the run is over once that process is.
    let root: (pid: Int32, started: UInt64)
    /// The bus name of the `secretctl run` that began it; it ends when that leaves the bus.
    let owner: String
    /// Whether it ended (a connection made during it keeps its scope, which then allows nothing).
    var ended = false
    /// The items the allowances name, and the store's change count they were found at.
    private var allowedItems: (changeCount: Int64, ids: Set<Int64>)?

    /// A PID namespace's identity.
    struct NamespaceID: Hashable, Codable {
        var device: UInt64
        var inode: UInt64
    }

    /// A scope with these fields.
    init(name: String, allowances: [Allowance], group: String?, namespace: NamespaceID, root: (pid: Int32, started: UInt64), owner: String) {
        self.name = name
        self.allowances = allowances
        self.group = group
        self.namespace = namespace
        self.root = root
        self.owner = owner
    }

    /// What is kept of it in the runtime directory, so that a secretd started again while the
    /// run goes on (a crash, an upgrade) knows it before its first client.
    struct Record: Codable {
        var name: String
        var allowances: [Allowance]
        var group: String?
        var namespace: NamespaceID
        var rootPid: Int32
        var rootStarted: UInt64
        var owner: String
    }

    /// It, as kept.
    var record: Record {
        Record(name: name, allowances: allowances, group: group, namespace: namespace, rootPid: root.pid, rootStarted: root.started, owner: owner)
    }

    /// The scope `record` kept.
    convenience init(_ record: Record) {
        self.init(
            name: record.name, allowances: record.allowances, group: record.group, namespace: record.namespace,
            root: (record.rootPid, record.rootStarted), owner: record.owner)
    }

    /// Whether its namespace's first process still runs (the same process: its start time).
    var isAlive: Bool { CallerIdentity.startTime("/proc/\(root.pid)") == root.started }

    /// Who its callers are to the audit trail.
    var identity: String { "run:\(name)" }

    /// Whether it may see `item` of `keyring`: an item of its group, or one its allowances name.
    func allows(_ item: Store.ItemRecord, in keyring: Keyring) -> Bool {
        guard !ended else { return false }
        if let group, (item.accessGroup ?? AccessGroupNames.defaultGroup) == group { return true }
        guard !allowances.isEmpty else { return false }
        if allowedItems?.changeCount != keyring.changeCount {
            var ids: Set<Int64> = []
            for search in allowances.flatMap(\.searches) {
                for found in (try? keyring.store.search(search)) ?? [] { ids.insert(found.id) }
            }
            allowedItems = (keyring.changeCount, ids)
        }
        return allowedItems?.ids.contains(item.id) == true
    }

    /// Where it may create an item with `attributes`: its group when the item names that group
    /// or no allowance; the `default` group for an item an allowance names; nil: nowhere.
    func placement(of attributes: [String: String]) -> String? {
        guard !ended else { return nil }
        let named = attributes[AccessGroupNames.attribute]
        if let group, named == nil || named == group { return group }
        if named == nil || named == AccessGroupNames.defaultGroup, allowances.contains(where: { $0.matches(attributes) }) {
            return AccessGroupNames.defaultGroup
        }
        return nil
    }
}

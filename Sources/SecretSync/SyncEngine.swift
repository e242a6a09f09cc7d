public import SecretCrypto
import Glibc

/// Sync rounds and the vault's membership, over a ``SyncGit`` clone. Every operation starts
/// from the remote as it is (``SyncGit/synchronize()``), changes files, and publishes; a push
/// refused because another machine pushed first is done again from the new remote, up to
/// ``attempts`` times.
public enum SyncEngine {
    /// How many times an operation is tried against a remote that keeps moving.
    public static let attempts = 8

    /// What one round did.
    public struct Report: Sendable {
        /// Versions that arrived and won: the caller makes its items so (nil item: deleted).
        public var accepted: [(header: SyncHeader, item: SyncItem?)] = []
        /// Local versions (held, or among the changes) that lost to an arrived one: the caller
        /// keeps what its item holds now as the item's history before it takes the arrived one.
        public var replacedLocal: [SyncHeader] = []
        /// Arrived versions that lost to the local one: the caller keeps them as history.
        public var lostArrived: [(header: SyncHeader, item: SyncItem?)] = []
        /// Files refused, and why; nothing local changed for them.
        public var refused: [SyncError] = []
        /// How many local versions were published.
        public var published = 0
        /// How many item files of the remote were read: those changed since the last round
        /// (and those it left unsettled), or all of them when it read everything.
        public var filesRead = 0
    }

    // MARK: - Membership

    /// Starts a vault on an empty remote, with this machine as its only device.
    public static func create(on git: SyncGit, identity: SyncIdentity, clock: HybridLogicalClock) throws(SyncError) -> SyncVault {
        var vault = SyncVault(id: SyncIDs.random(), identity: identity, clock: clock)
        let key = Gcrypt.randomKey()
        vault.keys[1] = key
        vault.starts[1] = .zero
        try attempt(git) { () throws(SyncError) in
            guard try git.files(in: ".")[SyncVault.vaultFile] == nil else { throw .vault("the remote holds a vault already; join it instead") }
            try git.write(SyncVault.vaultMagic + vault.id, to: SyncVault.vaultFile)
            try git.write(identity.device.entry, to: "\(SyncVault.devicesFolder)/\(SyncIDs.hex(identity.device.id))")
            try git.write(try SyncKeyWrap.wrap(key, start: .zero, generation: 1, vault: vault.id, for: identity.device),
                          to: "\(SyncVault.keysFolder(1))/\(SyncIDs.hex(identity.device.id))")
            return "a new vault"
        }
        return vault
    }

    /// Asks to join the vault on the remote: this machine waits in `pending/` until an existing
    /// device approves it; returns its state (no keys yet) and the code both machines show.
    public static func join(on git: SyncGit, identity: SyncIdentity, clock: HybridLogicalClock) throws(SyncError) -> (SyncVault, code: String) {
        var found: [UInt8] = []
        try attempt(git) { () throws(SyncError) in
            found = try vaultID(in: git)
            try git.write(identity.device.entry, to: "\(SyncVault.pendingFolder)/\(SyncIDs.hex(identity.device.id))")
            return "device \(SyncIDs.hex(identity.device.id)) asks to join"
        }
        return (SyncVault(id: found, identity: identity, clock: clock), identity.device.code(in: found))
    }

    /// The devices waiting for approval, with the code each shows.
    public static func pending(on git: SyncGit, vault: SyncVault) throws(SyncError) -> [(device: SyncDevice, code: String)] {
        try git.synchronize()
        return try git.files(in: SyncVault.pendingFolder).sorted { $0.key < $1.key }.map { (name, bytes) throws(SyncError) in
            let device = try SyncDevice(entry: bytes, fileName: name)
            return (device, device.code(in: vault.id))
        }
    }

    /// The vault's devices and those waiting for approval (with the code each shows), from the
    /// remote as it is now.
    public static func members(on git: SyncGit, vault: SyncVault) throws(SyncError)
        -> (devices: [SyncDevice], pending: [(device: SyncDevice, code: String)])
    {
        let waiting = try pending(on: git, vault: vault)
        let devices = try git.files(in: SyncVault.devicesFolder).sorted { $0.key < $1.key }.map { (name, bytes) throws(SyncError) in
            try SyncDevice(entry: bytes, fileName: name)
        }
        return (devices, waiting)
    }

    /// Approves the waiting device `id` (hex): every key generation this machine has is wrapped
    /// for it, and it becomes a device of the vault.
    public static func approve(_ id: String, on git: SyncGit, vault: SyncVault) throws(SyncError) {
        try attempt(git) { () throws(SyncError) in
            guard let entry = try git.files(in: SyncVault.pendingFolder)[id] else { throw .vault("no device \(id) is waiting") }
            let device = try SyncDevice(entry: entry, fileName: id)
            for (generation, key) in vault.keys {
                let start = vault.starts[generation] ?? .zero
                try git.write(try SyncKeyWrap.wrap(key, start: start, generation: generation, vault: vault.id, for: device),
                              to: "\(SyncVault.keysFolder(generation))/\(id)")
            }
            try git.write(entry, to: "\(SyncVault.devicesFolder)/\(id)")
            git.remove("\(SyncVault.pendingFolder)/\(id)")
            return "approve device \(id)"
        }
    }

    /// Removes device `id` (hex) and rotates the vault key: a new generation, wrapped for every
    /// other device only, seals everything written from now on, so the removed device cannot
    /// read it; and what it writes with the old key after the rotation's start is refused.
    public static func remove(_ id: String, on git: SyncGit, vault: inout SyncVault) throws(SyncError) {
        let generation = vault.generation + 1
        let key = Gcrypt.randomKey()
        var known = vault
        var start = SyncTimestamp.zero
        try attempt(git) { () throws(SyncError) in
            // The new generation begins after every version in the repository.
            for (name, bytes) in try git.files(in: SyncVault.itemsFolder) {
                if let record = try? SyncRecord(fileName: name, bytes: bytes, vault: known.id) { known.clock.observe(record.header.timestamp) }
            }
            start = known.clock.tick()
            let devices = try git.files(in: SyncVault.devicesFolder)
            let waiting = try git.files(in: SyncVault.pendingFolder)
            guard devices[id] != nil || waiting[id] != nil else { throw .vault("no device \(id) in the vault") }
            for (name, entry) in devices where name != id {
                let device = try SyncDevice(entry: entry, fileName: name)
                try git.write(try SyncKeyWrap.wrap(key, start: start, generation: generation, vault: known.id, for: device),
                              to: "\(SyncVault.keysFolder(generation))/\(name)")
            }
            git.remove("\(SyncVault.devicesFolder)/\(id)")
            git.remove("\(SyncVault.pendingFolder)/\(id)")
            for old in known.keys.keys { git.remove("\(SyncVault.keysFolder(old))/\(id)") }
            return "remove device \(id); vault key \(generation)"
        }
        vault.clock = known.clock
        vault.keys[generation] = key
        vault.starts[generation] = start
    }

    // MARK: - A round

    /// Brings the remote's versions in and this machine's out. `changes` are the local versions
    /// made since the last round (``SyncVault/stamp(item:deleted:)`` headers); each competes with
    /// what arrived for its item by the merge rule. Keys newly wrapped for this machine are taken
    /// in first. Where the remote's file of an item is not the version this machine holds
    /// (missing, refused, replayed, older), that version is written back as it was (`held`
    /// gives its item; nil for a deleted one), so a file the remote's host put back or took
    /// away does not stay there for machines that join later. Only the item files changed since
    /// the commit the last round merged against (``SyncVault/base``) are read, with those it
    /// left unsettled, so an idle round costs the same at any number of items; every file is
    /// read when that commit is unknown, gone or no ancestor of the remote's, and when new keys
    /// arrived. On a throw nothing was published; the caller keeps its copy of `vault` from
    /// before the call.
    public static func round(
        on git: SyncGit, vault: inout SyncVault, changes: [(header: SyncHeader, item: SyncItem?)],
        held: (SyncHeader) -> SyncItem?
    ) throws(SyncError) -> Report {
        var report = Report()
        var pending = Dictionary(changes.map { (SyncIDs.hex($0.header.item), $0) }, uniquingKeysWith: { $0.header.wins(over: $1.header) ? $0 : $1 })
        // Files read by an attempt whose push was refused: the vault may hold what they had.
        var readBefore: Set<String> = []
        var newKeys = false
        for _ in 0..<attempts {
            try git.synchronize()
            guard try vaultID(in: git) == vault.id else {
                throw .vault("the remote holds another vault than this keyring's (its vault file was replaced); nothing was changed")
            }
            let generations = vault.keys.count
            try takeKeys(from: git, into: &vault, report: &report)
            newKeys = newKeys || vault.keys.count != generations
            guard vault.generation > 0 else { return report }  // waiting for approval
            // A device removed from the vault stops: it must not write back what it can no longer read.
            guard try git.files(in: SyncVault.devicesFolder)[SyncIDs.hex(vault.identity.device.id)] != nil else {
                throw .vault("this machine was removed from the vault; it syncs no more (secretctl sync leave, then join again)")
            }
            // What arrived: the files changed since the commit the last round merged against,
            // with those it left unsettled; every file when that commit is unknown, or when new
            // keys may open files that could not be read before. Files sealed with a key
            // generation this machine was not given are newer than anything it could write back.
            let changed = newKeys ? nil : try vault.base.flatMap { commit throws(SyncError) in
                try git.changedFiles(in: SyncVault.itemsFolder, since: commit)
            }
            let names = changed.map { $0.union(vault.unsettled).union(readBefore) }
            readBefore.formUnion(names ?? [])
            var confirmed: Set<String> = []
            var unreadable: Set<String> = []
            let oversized = try git.oversizedFiles(in: SyncVault.itemsFolder, named: names)
            for name in oversized {
                report.refused.append(.malformed("\(name) is larger than any item file can be"))
            }
            let arrived = try git.files(in: SyncVault.itemsFolder, named: names)
            report.filesRead = arrived.count
            for (name, bytes) in arrived {
                let refusedBefore = report.refused.count
                if merge(name, bytes, into: &vault, pending: &pending, report: &report) { confirmed.insert(name) }
                if report.refused.count > refusedBefore, case .unknownKeyGeneration = report.refused.last { unreadable.insert(name) }
            }
            // What goes out: the local versions that still win, sealed with the newest key ...
            var written: Set<String> = []
            for change in pending.values {
                var header = change.header
                header.keyGeneration = vault.generation
                guard let key = vault.keys[header.keyGeneration] else { continue }
                let record = try SyncRecord.seal(change.item, header: header, key: key)
                try git.write(record.bytes, to: "\(SyncVault.itemsFolder)/\(header.fileName)")
                vault.hold(header)
                vault.see(header.fileName, from: SyncIDs.hex(header.device), at: header.timestamp)
                written.insert(header.fileName)
            }
            // ... and the held versions the remote lost or had replaced, unchanged: among the
            // files read (the others hold what they held when the last round left them).
            for name in names ?? Set(vault.current.keys) where !confirmed.contains(name) && !written.contains(name) && !unreadable.contains(name) {
                guard let header = vault.current[name], let key = vault.keys[header.keyGeneration] else { continue }
                let item = header.deleted ? nil : held(header)
                guard header.deleted || item != nil else { continue }
                try git.write(try SyncRecord.seal(item, header: header, key: key).bytes, to: "\(SyncVault.itemsFolder)/\(name)")
                written.insert(name)
            }
            switch try git.publish(message: "secretd: \(pending.count) items from \(SyncIDs.hex(vault.identity.device.id))") {
            case .pushed, .unchanged:
                report.published = pending.count
                vault.base = try git.head()
                vault.unsettled = Set(arrived.keys).union(oversized).subtracting(confirmed).subtracting(written)
                return report
            case .rejected:
                backOff()  // another machine pushed first: again, from the new remote
            }
        }
        throw .transport("the remote kept changing; tried \(attempts) times")
    }

    /// Takes in one arrived item file; whether it holds the version this machine now holds.
    private static func merge(
        _ name: String, _ bytes: [UInt8], into vault: inout SyncVault, pending: inout [String: (header: SyncHeader, item: SyncItem?)],
        report: inout Report
    ) -> Bool {
        let record: SyncRecord
        do {
            record = try SyncRecord(fileName: name, bytes: bytes, vault: vault.id)
        } catch {
            report.refused.append(error)
            return false
        }
        let arrived = record.header
        // The version held here (a local change made since supersedes it without a conflict):
        // its sealed part must still be whole for machines that join later, else it is
        // written back.
        func heldIsWhole() -> Bool {
            do {
                _ = try record.open(with: vault.keys)
                return true
            } catch {
                report.refused.append(error)
                return false
            }
        }
        if let held = vault.current[name], held == arrived { return heldIsWhole() }
        let local = pending[name]?.header
        let localHeader = local ?? vault.current[name]
        let seen = vault.seen[name]?[SyncIDs.hex(arrived.device)]
        let decision = SyncMerge.decide(arrived: arrived, local: localHeader, seenFromDevice: seen)
        if case .same = decision { return heldIsWhole() }
        if case .refuse(let error) = decision {
            report.refused.append(error)
            return false
        }
        // Sealed with a generation whose successor had begun before the version was made.
        if arrived.keyGeneration < vault.generation,
            ((arrived.keyGeneration + 1)...vault.generation).contains(where: { arrived.timestamp >= vault.starts[$0] ?? .zero })
        {
            report.refused.append(.retiredKey(file: name, generation: arrived.keyGeneration))
            return false
        }
        let item: SyncItem?
        do {
            item = try record.open(with: vault.keys)
        } catch {
            report.refused.append(error)
            return false
        }
        vault.clock.observe(arrived.timestamp)
        vault.see(name, from: SyncIDs.hex(arrived.device), at: max(seen ?? .zero, arrived.timestamp))
        switch decision {
        case .take(let losing):
            if let local {
                report.replacedLocal.append(local)
                pending[name] = nil
            } else if let losing {
                report.replacedLocal.append(losing)
            }
            vault.hold(arrived)
            report.accepted.append((arrived, item))
            return true
        case .keep:
            report.lostArrived.append((arrived, item))
            return false
        case .same, .refuse:
            return true
        }
    }

    /// Unwraps every key generation the remote has for this machine.
    private static func takeKeys(from git: SyncGit, into vault: inout SyncVault, report: inout Report) throws(SyncError) {
        let me = SyncIDs.hex(vault.identity.device.id)
        for generation in UInt32(1)...UInt32(max(vault.generation + 64, 64)) where vault.keys[generation] == nil {
            guard let wrapped = try git.files(in: SyncVault.keysFolder(generation))[me] else { continue }
            do {
                let (key, start) = try SyncKeyWrap.unwrap(
                    wrapped, generation: generation, vault: vault.id, identity: vault.identity,
                    fileName: "\(SyncVault.keysFolder(generation))/\(me)")
                vault.keys[generation] = key
                vault.starts[generation] = start
            } catch {
                report.refused.append(error)
            }
        }
    }

    /// Waits a random 50 to 300 ms before trying again, so that two machines that keep pushing
    /// at the same moment drift apart.
    private static func backOff() {
        let milliseconds = 50 + Int(Gcrypt.randomBytes(count: 1)[0]) % 251
        usleep(UInt32(milliseconds * 1000))
    }

    /// The vault id the remote's vault file names.
    static func vaultID(in git: SyncGit) throws(SyncError) -> [UInt8] {
        guard let bytes = try git.files(in: ".")[SyncVault.vaultFile] else { throw .vault("the remote holds no vault (secretctl sync init)") }
        guard bytes.count == SyncVault.vaultMagic.count + 16, bytes.starts(with: SyncVault.vaultMagic) else {
            throw .vault("the remote's \(SyncVault.vaultFile) file is not a vault file")
        }
        return Array(bytes.dropFirst(SyncVault.vaultMagic.count))
    }

    /// Runs `change` on the remote as it is and publishes it, again from the new remote when
    /// another machine pushed first.
    private static func attempt(_ git: SyncGit, _ change: () throws(SyncError) -> String) throws(SyncError) {
        for _ in 0..<attempts {
            try git.synchronize()
            let message = try change()
            if try git.publish(message: "secretd: \(message)") != .rejected { return }
            backOff()
        }
        throw .transport("the remote kept changing; tried \(attempts) times")
    }
}

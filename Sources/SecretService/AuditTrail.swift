import KeychainCore
import FoundationEssentials
import SecretStore

/// The audit trail (`secretctl audit`): every secret handed out, every item created, changed
/// or deleted, every refusal, every keyring unlocked, locked, created or deleted, with who
/// asked (the keyring's ``Keyring/accessor``) and when. A keyring subscriber: nothing else
/// tells it anything.
///
/// Stored sealed in the keyring database (``Store/appendAudit(_:by:)``): secretd seals for a
/// public key, so it writes while every keyring is locked; reading needs the keyring that holds
/// the private key (the login keyring, or the first unlocked one) unlocked.
///
/// What it costs, and what a power cut may lose:
/// - An entry of a write joins the write's own transaction: the change and its entry are
///   durable together or not at all.
/// - A read or a refusal changes nothing on disk, and must not wait for a sync of its own: its
///   entry waits in memory until the next write's commit, or at most ``flushDelay`` seconds,
///   then is committed (one sync for every entry of those seconds), and at stop. A power cut
///   or a kill may lose the entries of the last ``flushDelay`` seconds of reads and refusals,
///   never an entry of a write that was acknowledged.
///
/// Runs on the main loop's thread only.
final class AuditTrail {
    /// How long reads and refusals may wait in memory before they are committed.
    static let flushDelay = 5.0
    /// Entries that may wait in memory; more are committed at once.
    static let maximumWaiting = 256
    /// Entries kept in memory while no keyring has ever been unlocked (there is no key to seal
    /// for yet); beyond it the oldest are dropped, and the first entry written says how many.
    static let maximumUnsealed = 10_000

    private let keyring: Keyring
    private let commitBarrier: CommitBarrier
    private let clock: () -> Date
    /// How long entries are kept (0: no trail at all).
    private let keep: TimeInterval
    private var writer: Store.AuditWriter?
    private var waiting: [Store.AuditEntry] = []
    private var flushScheduled = false
    private var dropped = 0
    private var lastPrune: Date?
    private var failureLogged = false

    /// A trail of `keyring`'s events, kept `keepDays` days (0: none is kept), committed
    /// through `commitBarrier`, on `clock`'s time.
    init(keyring: Keyring, commitBarrier: CommitBarrier, clock: @escaping () -> Date, keepDays: Int) {
        self.keyring = keyring
        self.commitBarrier = commitBarrier
        self.clock = clock
        keep = TimeInterval(keepDays) * 86_400
        guard keepDays > 0 else { return }
        keyring.subscribe { [weak self] event in self?.follow(event) }
        keyring.recordApartWrites { [weak self] writes in self?.recording(writes) }
    }

    /// Whether the trail is kept (`audit-keep` is not 0).
    var isOn: Bool { keep > 0 }

    // MARK: - Recording

    /// Records one event of the keyring.
    private func follow(_ event: KeyringEvent) {
        let session = SecretServiceNames.sessionCollection
        switch event {
        case .itemCreated where keyring.publishingRecorded, .itemChanged where keyring.publishingRecorded:
            break  // its entry was written with it (``recording(_:)``)
        case .itemCreated(let item, let collection, let label, let attributes):
            record(.create, item: item, in: collection, contents: (label, attributes), durable: true)
        case .itemChanged(_, let after, let label, let attributes, let collection):
            record(.change, item: after, in: collection, contents: (label, attributes), durable: true)
        case .itemDeleted(let item, let collection, let label, let attributes):
            record(.delete, item: item, in: collection, contents: label.map { ($0, attributes ?? [:]) }, durable: true)
        case .secretRead(let item, let collection, let label, let attributes, let route):
            record(.read, item: item, in: collection, contents: (label, attributes), detail: route, durable: false)
        case .refused(let refusal):
            record(.refused, item: refusal.item, in: refusal.collection, contents: nil,
                   detail: "\(refusal.route): \(refusal.reason)", durable: false)
        case .collectionCreated(let collection) where collection.name != session:
            record(.createKeyring, keyring: collection, durable: true)
        case .collectionDeleted(let collection) where collection.name != session:
            if writer?.key.collectionID == collection.id { writer = nil }  // its trail went with it
            record(.deleteKeyring, keyring: collection, durable: true)
        case .unlocked(let collection) where collection.name != session:
            record(.unlock, keyring: collection, durable: true)
        case .locked(let collection) where collection.name != session:
            record(.lock, keyring: collection, durable: false)
        case .restored:
            // The trail is the backup's now, and so may be its key: a new writer for it.
            writer = nil
            add(entry(.restore, keyring: nil, detail: nil), durable: true)
        case .collectionCreated, .collectionDeleted, .unlocked, .locked, .collectionRelabelled:
            break
        }
    }

    /// Records `event` about `item` (with its label and attributes when they are known).
    /// `durable` entries are written into the open transaction at once; the others wait.
    private func record(
        _ event: Store.AuditEntry.Event, item: Store.ItemRecord?, in collection: Store.CollectionRecord?,
        contents: (label: String, attributes: [String: String])?, detail: String? = nil, durable: Bool
    ) {
        add(entry(event, item: item.map { ($0.id, $0.accessGroup) }, in: collection, contents: contents, detail: detail), durable: durable)
    }

    /// The entries of items about to be written off the loop, written in the write's own
    /// transaction (``Keyring/recordApartWrites(with:)``), so that a write and its entry are
    /// durable together and the loop writes nothing after it; nil while there is no key to
    /// seal for yet (they are then recorded when their events are published).
    private func recording(_ writes: [Keyring.ApartItemWrite]) -> ApartWriter.Recording? {
        guard let writer = currentWriter() else { return nil }
        // Who and when, from the loop; each write's entry is made where it is written (20,000
        // of them took the loop about 20 ms).
        let asked = entry(.create, keyring: nil, detail: nil)
        return { store throws(StoreError) in
            let entries = writes.map { write in
                var entry = asked
                entry.event = write.isNew ? .create : .change
                entry.keyring = write.collection.name
                return Self.describing(
                    entry, item: (write.sealed.id, write.sealed.accessGroup), contents: (write.sealed.label, write.sealed.attributes))
            }
            try store.appendAudit(entries, by: writer)
        }
    }

    /// The entry of `event` about the item `item` (its id and group), with its label and
    /// attributes when they are known.
    private func entry(
        _ event: Store.AuditEntry.Event, item: (id: Int64, accessGroup: String?)?, in collection: Store.CollectionRecord?,
        contents: (label: String, attributes: [String: String])?, detail: String?
    ) -> Store.AuditEntry {
        Self.describing(entry(event, keyring: collection, detail: detail), item: item, contents: contents)
    }

    /// `entry` with the item `item` (its id and group), and its label and account when known.
    private static func describing(
        _ entry: Store.AuditEntry, item: (id: Int64, accessGroup: String?)?, contents: (label: String, attributes: [String: String])?
    ) -> Store.AuditEntry {
        var entry = entry
        if let item {
            entry.itemID = item.id
            entry.accessGroup = item.accessGroup ?? AccessGroupNames.defaultGroup
        }
        if let contents {
            entry.label = contents.label
            entry.service = contents.attributes["service"] ?? contents.attributes["server"]
            entry.account = contents.attributes["account"] ?? contents.attributes["username"] ?? contents.attributes["user"]
        }
        return entry
    }

    private func record(_ event: Store.AuditEntry.Event, keyring collection: Store.CollectionRecord, durable: Bool) {
        add(entry(event, keyring: collection, detail: nil), durable: durable)
    }

    private func entry(_ event: Store.AuditEntry.Event, keyring collection: Store.CollectionRecord?, detail: String?) -> Store.AuditEntry {
        let accessor = keyring.accessor
        return Store.AuditEntry(
            time: Int64((clock().timeIntervalSince1970 * 1000).rounded(.down)), event: event, identity: accessor.identity,
            pid: accessor.pid, command: accessor.command, keyring: collection?.name, detail: detail)
    }

    private func add(_ entry: Store.AuditEntry, durable: Bool) {
        waiting.append(entry)
        if waiting.count > Self.maximumUnsealed {
            waiting.removeFirst()
            dropped += 1
        }
        if durable || waiting.count >= Self.maximumWaiting {
            write()
        } else {
            scheduleFlush()
        }
    }

    /// Writes and commits what waits: at stop, before the database closes.
    func stop() {
        flushScheduled = false
        if write() { _ = commitBarrier.commit() }
    }

    // MARK: - Writing

    /// Commits what waits within ``flushDelay`` seconds.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        MainLoop.after(seconds: Self.flushDelay) { [weak self] in
            self?.keyring.apartWrites.whenWriteEnds { [weak self] in
                guard let self, flushScheduled else { return }
                flush()
            }
        }
    }

    /// Writes what waits and has it committed now (before a reader reads the trail, and at stop).
    func flush() {
        flushScheduled = false
        guard write() else { return }
        commitBarrier.scheduleFlush()
    }

    /// Writes what waits into the store's open transaction (committed with it); false when
    /// nothing was written (nothing waits, or there is no key to seal for yet).
    @discardableResult
    private func write() -> Bool {
        guard !waiting.isEmpty, let writer = currentWriter() else { return false }
        if dropped > 0, let first = waiting.first {
            waiting.insert(Store.AuditEntry(
                time: first.time, event: .refused, identity: "secretd",
                detail: "\(dropped) earlier entries were dropped: no keyring was unlocked to seal them for"), at: 0)
            dropped = 0
        }
        do throws(StoreError) {
            try keyring.store.appendAudit(waiting, by: writer)
            waiting.removeAll(keepingCapacity: true)
            failureLogged = false
            pruneIfDue()
            return true
        } catch {
            if !failureLogged { Log.error("cannot write the audit trail: \(error); its entries wait in memory") }
            failureLogged = true
            // A full disk (or one made read-only) keeps them for later; anything else would fail again.
            switch error {
            case .noSpace, .readOnly: return false
            default: break
            }
            waiting.removeAll()
            return false
        }
    }

    /// The writer of this run: for the trail's key pair, made the first time a keyring that can
    /// hold its private key is unlocked (the login keyring, else the default one, else any).
    private func currentWriter() -> Store.AuditWriter? {
        if let writer { return writer }
        do throws(StoreError) {
            let key: Store.AuditKey
            if let existing = try keyring.store.auditKey() {
                key = existing
            } else {
                guard let (holder, keys) = try keyHolder() else { return nil }
                key = try keyring.store.createAuditKey(sealedBy: holder, keys: keys)
                Log.info("the audit trail is sealed for a new key held by the \(holder.name) keyring")
            }
            writer = try keyring.store.auditWriter(for: key)
            return writer
        } catch {
            if !failureLogged { Log.error("cannot prepare the audit trail: \(error)") }
            failureLogged = true
            return nil
        }
    }

    /// The unlocked keyring to seal a new key pair's private half under.
    private func keyHolder() throws(StoreError) -> (Store.CollectionRecord, Store.ItemKeys)? {
        let collections = try keyring.collections().filter { $0.name != SecretServiceNames.sessionCollection }
        let preferred = [SecretServiceNames.loginCollection, try keyring.aliases()["default"]].compactMap { $0 }
        let ordered = preferred.compactMap { name in collections.first { $0.name == name } } + collections
        for collection in ordered {
            if let keys = keyring[collection.id], keys.master != nil { return (collection, keys) }
        }
        return nil
    }

    /// Deletes entries older than the time kept, at most once an hour.
    private func pruneIfDue() {
        let now = clock()
        if let lastPrune, now.timeIntervalSince(lastPrune) < 3600 { return }
        lastPrune = now
        let before = Int64(((now.timeIntervalSince1970 - keep) * 1000).rounded(.down))
        do throws(StoreError) {
            try keyring.store.pruneAudit(before: before)
        } catch {
            Log.error("cannot prune the audit trail: \(error)")
        }
    }

    // MARK: - Reading

    /// The entries from `since` on (what waits in memory first written), oldest first, each
    /// opened with the keys held for its keyring.
    func read(since: Date) throws(StoreError) -> Store.AuditReading {
        flush()
        var reading = try keyring.store.readAudit(
            since: Int64((since.timeIntervalSince1970 * 1000).rounded(.down)), keys: { keyring[$0.id] })
        if !waiting.isEmpty { reading.unreadable += waiting.count }  // no key to seal them for yet
        return reading
    }
}

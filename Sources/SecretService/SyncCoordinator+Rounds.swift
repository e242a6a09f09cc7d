// Sync between machines, the rounds (SyncCoordinator+Calls has the Sync1 operations): local changes stamped when
// made, one operation at a time on a keyring's clone, rounds on a thread of their own, and what
// arrived written on the main loop.

import DBusValues
import FoundationEssentials
import Glibc
import KeychainCore
import SecretCrypto
import SecretStore
import SecretSync

extension SyncCoordinator {
    // MARK: - The clone, one operation at a time

    /// Runs `operation` on collection `id`'s clone now if nothing uses it, else after what does;
    /// `operation` calls the closure it is given when it is over.
    func exclusively(_ id: Int64, _ operation: @escaping (_ release: @escaping () -> Void) -> Void) {
        guard let run = runs[id] else { return operation({}) }
        guard !run.running else {
            runs[id]?.queued.append { [weak self] in self?.exclusively(id, operation) }
            return
        }
        runs[id]?.running = true
        operation { [weak self] in self?.released(id) }
    }

    /// The clone of collection `id` is free again: the next queued operation runs, or the round
    /// asked for meanwhile.
    func released(_ id: Int64) {
        guard var run = runs[id] else { return }
        run.running = false
        if !run.queued.isEmpty {
            let next = run.queued.removeFirst()
            runs[id] = run
            return next()
        }
        runs[id] = run
        if run.again || !run.waiting.isEmpty { scheduleRound(id, after: 0) }
    }

    /// The store was restored: the synced collections and their state are the backup's now. A
    /// round on its thread started from the state the restore replaced (its items, ids and
    /// vault), so when it ends it writes nothing (the next round takes again from the remote
    /// what it brought); until then its clone stays its own. The operations queued for a clone
    /// and the calls waiting for a round carry over to the collection's new run.
    func restored() {
        let before = runs
        restores += 1
        runs = [:]
        loadRuns()
        for (id, run) in before {
            guard runs[id] != nil else {
                for done in run.waiting { done(.failure(.failed("the keyring does not sync in the restored store"))) }
                for next in run.queued { next() }
                continue
            }
            runs[id]?.running = run.running
            runs[id]?.queued += run.queued
            runs[id]?.waiting += run.waiting
        }
    }

    /// Stamps a change for every item of `collection` that may sync and never did (no sync
    /// id, no change waiting): all of them when a keyring starts syncing, and after a joining
    /// machine's first round those the vault did not have; returns how many.
    func stampUnsynced(in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys) -> Int {
        var count = 0
        runs[collection.id]?.unsyncedMayExist = false
        do throws(StoreError) {
            for item in try store.itemsNeverSynced(in: collection) {
                guard Self.syncs(try store.readItem(item, in: collection, keys: itemKeys).attributes) else { continue }
                stamp(item.id, in: collection, deleted: false)
                count += 1
            }
        } catch {
            // Those found so far go out; the rest are looked for again after the next round.
            Log.warning("sync of the keyring \(collection.name) cannot find all its items that never synced: \(error)")
            runs[collection.id]?.again = true
            runs[collection.id]?.unsyncedMayExist = true
        }
        return count
    }

    /// The local item of `collection` that never synced (no sync id, no change waiting) and has
    /// exactly `attributes`, with its contents: the same item as one with those attributes that
    /// arrives (two machines that had it before they synced).
    private func neverSynced(
        with attributes: [String: String], in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys,
        waiting: Set<Int64>
    ) -> (Store.ItemRecord, ItemContents)? {
        for item in (try? store.search(attributes, in: collection)) ?? [] where !waiting.contains(item.id) {
            guard (try? store.syncID(ofItem: item.id)) == .some(nil) else { continue }
            if let contents = try? store.readItem(item, in: collection, keys: itemKeys), contents.attributes == attributes { return (item, contents) }
        }
        return nil
    }

    // MARK: - Local changes

    /// Stamps a local change of `item` (created, changed, or `deleted`) in a synced collection,
    /// when it is made, and schedules a round; versions that arrived from the remote are not
    /// local changes.
    func noteLocalChange(_ item: Store.ItemRecord, in collection: Store.CollectionRecord, deleted: Bool) {
        guard !applyingArrived, runs[collection.id] != nil else { return }
        stamp(item.id, in: collection, deleted: deleted)
        scheduleRound(collection.id, after: Self.debounce)
    }

    /// Records a change of item `itemID`, stamped now by the collection's clock.
    private func stamp(_ itemID: Int64, in collection: Store.CollectionRecord, deleted: Bool) {
        guard var run = runs[collection.id] else { return }
        let stamp = run.clock.tick()
        runs[collection.id] = run
        do {
            try store.noteSyncChange(
                Store.SyncChange(itemID: itemID, milliseconds: stamp.milliseconds, counter: stamp.counter, deleted: deleted), in: collection)
        } catch {
            Log.warning("cannot record a change for sync: \(error)")
            runs[collection.id]?.unsyncedMayExist = true
        }
    }

    // MARK: - Rounds

    /// Loads the synced collections (their clocks after every stamp already made) and starts
    /// the timer of the rounds every `sync-interval` seconds; at start.
    func startSyncing() {
        loadRuns()
        everyInterval()
    }

    /// Loads the synced collections and their clocks (at start, and after a restore), and
    /// starts a round of each unlocked one.
    func loadRuns() {
        do throws(StoreError) {
            let collections = try store.collections()
            for settings in try store.syncedCollections() {
                guard let collection = collections.first(where: { $0.id == settings.collectionID }) else { continue }
                var clock = HybridLogicalClock(wallClock: Self.wallClock)
                for change in try store.syncChanges(in: collection) {
                    clock.observe(SyncTimestamp(milliseconds: change.milliseconds, counter: change.counter))
                }
                runs[collection.id] = Run(clock: clock)
                if keyring[collection.id] != nil { scheduleRound(collection.id, after: 0) }
            }
        } catch {
            Log.error("cannot read which keyrings sync: \(error); none syncs until secretd restarts")
        }
    }

    private func everyInterval() {
        MainLoop.after(seconds: Double(interval)) { [weak self] in
            guard let self else { return }
            for id in self.runs.keys where self.keyring[id] != nil { self.startRound(id, done: nil) }
            self.everyInterval()
        }
    }

    /// A round of `id` in `seconds`, unless another is asked for meanwhile.
    func scheduleRound(_ id: Int64, after seconds: Double) {
        guard var run = runs[id] else { return }
        run.timer += 1
        let token = run.timer
        runs[id] = run
        MainLoop.after(seconds: seconds) { [weak self] in
            guard let self, self.runs[id]?.timer == token else { return }
            self.startRound(id, done: nil)
        }
    }

    /// The sync state of `collection`, opened when it is first needed after an unlock, with
    /// its items' entries. A state from before the entries were rows has them inside: they
    /// move into rows now (nothing is published again).
    func openVault(_ collection: Store.CollectionRecord) -> SyncVault? {
        if let vault = runs[collection.id]?.vault { return vault }
        guard let itemKeys = keyring[collection.id], let stored = try? store.syncState(of: collection, keys: itemKeys) else { return nil }
        var vault: SyncVault
        do throws(SyncError) {
            vault = try SyncVault(decoding: stored.state, wallClock: Self.wallClock)
            for (name, entry) in stored.entries { try vault.takeEntry(name, entry) }
        } catch {
            Log.warning("the sync state of the keyring \(collection.name) cannot be read: \(error)")
            return nil
        }
        var run = runs[collection.id] ?? Run(clock: vault.clock)
        vault.clock.observe(run.clock.last)
        run.clock.observe(vault.clock.last)
        run.vault = vault
        runs[collection.id] = run
        if !vault.touched.isEmpty, let settings = try? store.syncSettings(of: collection) {
            keep(vault, of: collection, remote: settings.remote)
            vault.touched = []
        }
        return vault
    }

    /// Starts a round of collection `id` now, unless one is running (then one follows it);
    /// `done` is told what it did.
    func startRound(_ id: Int64, done: ((Result<Outcome, SecretServiceError>) -> Void)?) {
        guard let run = runs[id] else { done?(.failure(.failed("the keyring does not sync"))); return }
        if let done { runs[id]?.waiting.append(done) }
        guard !run.running else {
            runs[id]?.again = true
            return
        }
        let collection: Store.CollectionRecord
        let settings: Store.SyncSettings
        var vault: SyncVault
        let prepared: Outgoing
        do throws(StoreError) {
            guard let found = try store.collections().first(where: { $0.id == id }) else {
                answerWaiting(id, .failure(.failed("the keyring no longer exists")))
                runs[id] = nil
                return
            }
            collection = found
            guard let itemKeys = keyring[id], let opened = openVault(collection) else {
                return answerWaiting(id, .failure(.isLocked("the keyring is locked; it syncs once it is unlocked")))
            }
            vault = opened
            guard let synced = try store.syncSettings(of: collection) else {
                answerWaiting(id, .failure(.failed("the keyring no longer syncs")))
                runs[id] = nil
                return
            }
            settings = synced
            prepared = try outgoingVersions(of: collection, keys: itemKeys, vault: &vault)
        } catch {
            // Nothing went out: the changes wait for the next round, and the status says why.
            Log.warning("sync of a keyring cannot read what to publish: \(error); it is tried again later")
            if let found = try? store.collections().first(where: { $0.id == id }) {
                bookkeep("record the failed round") { () throws(StoreError) in
                    try store.recordSyncRound(of: found, error: "cannot read what to publish: \(error)", resolved: 0)
                }
            }
            return answerWaiting(id, .failure(SecretServiceError(storeFailure: error)))
        }
        let (versions, sent) = (prepared.versions, prepared.sent)
        runs[id]?.running = true
        runs[id]?.again = false
        // This round answers the calls that asked for a round before it started; those that ask
        // while it runs get the next one, which starts after their changes were made.
        let answering = runs[id]?.waiting ?? []
        runs[id]?.waiting = []
        let git = syncClone(of: collection, remote: settings.remote)
        let (start, outgoing, daemon, generation) = (vault, versions, UncheckedBox(self), restores)
        offMainLoop({ () -> Result<(SyncVault, SyncEngine.Report), SyncError> in
            var working = start
            return Result { () throws(SyncError) in
                let report = try SyncEngine.round(on: git, vault: &working, changes: outgoing) { header in
                    // A version the remote lost: read again on the main loop, as it is now.
                    // (Not after a restore: the item ids are the replaced store's.)
                    MainLoop.onMainLoop { daemon.value.restores == generation ? daemon.value.heldVersion(header, collection) : nil }
                }
                return (working, report)
            }
        }) { [weak self] outcome in
            guard let self else { return }
            guard generation == self.restores else {
                Log.info("a sync round of the keyring \(collection.name) ended after a restore: nothing it brought is written; the next round takes it again")
                if self.runs[id] != nil {
                    self.runs[id]?.waiting.insert(contentsOf: answering, at: 0)
                } else {
                    for done in answering { done(.failure(.failed("the keyring does not sync in the restored store"))) }
                }
                return self.released(id)
            }
            let result: Result<Outcome, SecretServiceError>
            switch outcome {
            case .success(let (updated, report)):
                result = self.apply(report, updated, sent: sent, collection: collection, remote: settings.remote)
            case .failure(let error):
                Log.warning("sync of the keyring \(collection.name) failed: \(error); it is tried again later")
                self.bookkeep("record the failed round") { () throws(StoreError) in
                    try self.store.recordSyncRound(of: collection, error: "\(error)", resolved: 0)
                }
                result = .failure(.failed("\(error)"))
            }
            for done in answering { done(result) }
            self.released(id)
        }
    }

    /// What a round publishes: a version of each local change (a delete marker for an item
    /// gone or no longer allowed to leave, if it was ever published) and the changes they stand
    /// for. A read that fails fails the round; it is never taken for a deletion. Only the
    /// changed items are read: a round costs what changed, not what the keyring holds.
    private struct Outgoing {
        var versions: [(header: SyncHeader, item: SyncItem?)] = []
        var sent: [Store.SyncChange] = []
    }

    private func outgoingVersions(
        of collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys, vault: inout SyncVault
    ) throws(StoreError) -> Outgoing {
        var outgoing = Outgoing()
        for change in try store.syncChanges(in: collection) {
            let known = try store.syncID(ofItem: change.itemID)
            var syncItem: SyncItem?
            if !change.deleted, let item = try store.item(id: change.itemID) {
                let contents = try store.readItem(item, in: collection, keys: itemKeys)
                if Self.syncs(contents.attributes) { syncItem = SyncItem(contents: contents, created: item.created, modified: item.modified) }
            }
            if syncItem == nil && known == nil {
                try store.removeSyncChange(change)
                continue
            }
            let syncID = known ?? SyncIDs.random()
            if known == nil { try store.setSyncID(syncID, ofItem: change.itemID, in: collection) }
            let stamp = SyncTimestamp(milliseconds: change.milliseconds, counter: change.counter)
            vault.clock.observe(stamp)
            outgoing.versions.append((SyncHeader(vault: vault.id, item: syncID, timestamp: stamp, device: vault.identity.device.id,
                                                 deleted: syncItem == nil, keyGeneration: vault.generation), syncItem))
            outgoing.sent.append(change)
        }
        return outgoing
    }

    /// Runs a write of sync's own bookkeeping; one that fails is logged with `what` it was for
    /// (the round's result stands; the next round finds what is left to do).
    func bookkeep(_ what: String, _ write: () throws(StoreError) -> Void) {
        do {
            try write()
        } catch {
            Log.warning("sync cannot \(what): \(error)")
        }
    }

    func answerWaiting(_ id: Int64, _ result: Result<Outcome, SecretServiceError>) {
        let waiting = runs[id]?.waiting ?? []
        runs[id]?.waiting = []
        for done in waiting { done(result) }
    }

    /// The item this machine holds under `header` (its version as it is now), for a file the
    /// remote lost; nil when it changed since (its change goes out in the next round) or is gone.
    private func heldVersion(_ header: SyncHeader, _ collection: Store.CollectionRecord) -> SyncItem? {
        guard let itemID = try? store.itemID(withSyncID: header.item, in: collection), let itemKeys = keyring[collection.id],
            let item = try? store.item(id: itemID), let contents = try? store.readItem(item, in: collection, keys: itemKeys),
            (try? store.syncChanges(in: collection).contains { $0.itemID == itemID }) == false
        else { return nil }
        return SyncItem(contents: contents, created: item.created, modified: item.modified)
    }

    /// Writes what a round brought: the versions that won, the losers kept as history; then the
    /// changes it published are done, and the new state is kept.
    private func apply(
        _ report: SyncEngine.Report, _ updated: SyncVault, sent: [Store.SyncChange],
        collection: Store.CollectionRecord, remote: String
    ) -> Result<Outcome, SecretServiceError> {
        guard let itemKeys = keyring[collection.id] else { return .failure(.isLocked("the keyring was locked during the round; it syncs again once unlocked")) }
        applyingArrived = true
        defer { applyingArrived = false }
        var outcome = Outcome(published: report.published, refused: report.refused.map(\.description))
        let sentItems = Set(sent.map(\.itemID))
        let sentChanges = Set(sent)
        let waitingChanges: [Store.SyncChange]
        do throws(StoreError) {
            waitingChanges = try store.syncChanges(in: collection)
        } catch {
            // What arrived stays on the remote: the next round takes it again.
            Log.warning("sync of the keyring \(collection.name) cannot read its changes to write what arrived: \(error)")
            bookkeep("record the failed round") { () throws(StoreError) in
                try store.recordSyncRound(of: collection, error: "cannot write what arrived: \(error)", resolved: 0)
            }
            return .failure(SecretServiceError(storeFailure: error))
        }
        let later = Dictionary(waitingChanges.filter { change in !sentChanges.contains(change) }.map { ($0.itemID, $0) },
                               uniquingKeysWith: { first, _ in first })
        let waitingIDs = Set(waitingChanges.map(\.itemID))
        for (header, arrived) in report.accepted {
            let itemID: Int64?
            do {
                itemID = try store.itemID(withSyncID: header.item, in: collection)
            } catch {
                Log.warning("cannot write a version that arrived by sync: \(error)")
                continue
            }
            let item = itemID.flatMap { try? store.item(id: $0) }
            // A local change made during the round, later than the arrived version: it stays,
            // and goes out next round; the arrived one is history.
            if let itemID, let change = later[itemID],
                SyncHeader(vault: header.vault, item: header.item, timestamp: SyncTimestamp(milliseconds: change.milliseconds, counter: change.counter),
                           device: updated.identity.device.id, deleted: change.deleted, keyGeneration: 0).wins(over: header)
            {
                keepHistory(header, arrived, in: collection, keys: itemKeys)
                outcome.conflicts += 1
                continue
            }
            // What this machine had is history: an edit of its own that lost is a conflict.
            if let item, let contents = try? store.readItem(item, in: collection, keys: itemKeys) {
                let previous = report.replacedLocal.first { $0.item == header.item }
                    ?? SyncHeader(vault: header.vault, item: header.item, timestamp: .zero, device: updated.identity.device.id, deleted: false, keyGeneration: 0)
                keepHistory(previous, SyncItem(contents: contents, created: item.created, modified: item.modified), in: collection, keys: itemKeys)
                if sentItems.contains(item.id) { outcome.conflicts += 1 }
            }
            do {
                switch (item, arrived) {
                case (let item?, nil):
                    try keyring.deleteItem(item, in: collection, keys: itemKeys)
                case (let item?, let arrived?):
                    guard Provider.checkItemText(label: arrived.contents.label, attributes: arrived.contents.attributes) == nil else { continue }
                    _ = try keyring.updateItem(item, in: collection, keys: itemKeys, contents: arrived.contents)
                case (nil, let arrived?):
                    guard Provider.checkItemText(label: arrived.contents.label, attributes: arrived.contents.attributes) == nil,
                        Self.syncs(arrived.contents.attributes)
                    else { continue }
                    if let (twin, contents) = neverSynced(
                        with: arrived.contents.attributes, in: collection, keys: itemKeys, waiting: waitingIDs)
                    {
                        try adopt(twin, contents, as: header, arrived, in: collection, keys: itemKeys, outcome: &outcome)
                        continue
                    }
                    let created = try keyring.createItem(
                        in: collection, keys: itemKeys, contents: arrived.contents,
                        times: Store.Times(created: arrived.created, modified: arrived.modified))
                    try store.setSyncID(header.item, ofItem: created.id, in: collection)
                case (nil, nil):
                    break
                }
                outcome.received += 1
            } catch {
                Log.warning("cannot write a version that arrived by sync: \(error)")
            }
        }
        for (header, arrived) in report.lostArrived {
            keepHistory(header, arrived, in: collection, keys: itemKeys)
            outcome.conflicts += 1
        }
        // Published, unless this machine still waits for approval; then what the vault did not
        // have goes out (a joining machine's own items).
        if updated.generation > 0 {
            for change in sent {
                bookkeep("mark a change published") { () throws(StoreError) in
                    try store.removeSyncChange(change)
                    if change.deleted, try store.item(id: change.itemID) == nil { try store.forgetSyncID(ofItem: change.itemID) }
                }
            }
            if runs[collection.id]?.unsyncedMayExist == true, stampUnsynced(in: collection, keys: itemKeys) > 0 { runs[collection.id]?.again = true }
        }
        // The state is sealed again only when the round changed it (an idle round does not).
        let before = runs[collection.id]?.vault
        if report.published > 0 || !report.accepted.isEmpty || !report.lostArrived.isEmpty || !updated.touched.isEmpty
            || before?.keys.count != updated.keys.count || before?.base != updated.base || before?.unsettled != updated.unsettled
        {
            keep(updated, of: collection, remote: remote)
        } else {
            runs[collection.id]?.vault?.clock.observe(updated.clock.last)
            runs[collection.id]?.clock.observe(updated.clock.last)
        }
        runs[collection.id]?.refused = outcome.refused
        for refusal in outcome.refused { Log.warning("sync of the keyring \(collection.name) refused a file: \(refusal)") }
        bookkeep("record the round") { () throws(StoreError) in
            try store.recordSyncRound(of: collection, error: nil, resolved: outcome.conflicts)
        }
        if outcome.published + outcome.received + outcome.conflicts > 0 {
            Log.info("synced the keyring \(collection.name): \(outcome.published) out, \(outcome.received) in, \(outcome.conflicts) conflicts resolved")
        }
        return .success(outcome)
    }

    /// Makes the local item `twin`, which never synced, the arrived item `header` (they have the
    /// same attributes): the later of the two (the local one by its modified time) is its
    /// version, the other its history; the local one, if it wins, goes out as a change.
    private func adopt(
        _ twin: Store.ItemRecord, _ contents: ItemContents, as header: SyncHeader, _ arrived: SyncItem,
        in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys, outcome: inout Outcome
    ) throws(StoreError) {
        try store.setSyncID(header.item, ofItem: twin.id, in: collection)
        let same = contents.label == arrived.contents.label && contents.contentType == arrived.contents.contentType
            && contents.secret.constantTimeEquals(arrived.contents.secret)
        guard !same else { return }
        outcome.conflicts += 1
        let localTime = SyncTimestamp(milliseconds: twin.modified * 1000)
        if localTime > header.timestamp {
            keepHistory(header, arrived, in: collection, keys: itemKeys)
            stamp(twin.id, in: collection, deleted: false)
            runs[collection.id]?.again = true
        } else {
            var own = header
            own.timestamp = localTime
            own.device = runs[collection.id]?.vault?.identity.device.id ?? header.device
            keepHistory(own, SyncItem(contents: contents, created: twin.created, modified: twin.modified), in: collection, keys: itemKeys)
            _ = try keyring.updateItem(twin, in: collection, keys: itemKeys, contents: arrived.contents)
            outcome.received += 1
        }
    }

    /// Keeps a version that lost as the item's history.
    private func keepHistory(_ header: SyncHeader, _ item: SyncItem?, in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys) {
        do {
            try store.addSyncHistory(
                syncID: header.item, milliseconds: header.timestamp.milliseconds, counter: header.timestamp.counter, device: header.device,
                plaintext: item?.encoded(), in: collection, keys: itemKeys)
        } catch {
            Log.warning("cannot keep a version in the history: \(error)")
        }
    }

    /// Keeps `vault` as `collection`'s sync state, in memory and sealed in the store: the
    /// state proper and the entries of the items it touched since they were last kept (those
    /// stay touched when the save fails, for the next).
    func keep(_ vault: SyncVault, of collection: Store.CollectionRecord, remote: String) {
        var vault = vault
        if let clock = runs[collection.id]?.clock { vault.clock.observe(clock.last) }
        runs[collection.id]?.clock.observe(vault.clock.last)
        runs[collection.id]?.vault = vault
        guard let itemKeys = keyring[collection.id] else { return }
        do {
            let entries = Dictionary(uniqueKeysWithValues: vault.touched.map { ($0, vault.encodedEntry($0)) })
            try store.saveSyncState(vault.encoded(), entries: entries, remote: remote, of: collection, keys: itemKeys)
            runs[collection.id]?.vault?.touched = []
        } catch {
            Log.warning("cannot save the sync state of the keyring \(collection.name): \(error)")
        }
    }

    /// Runs `work` on a thread of its own (git talks to the network) and gives its result to
    /// `done` on the main loop, once no write off the loop is in progress (`done` writes what
    /// arrived).
    func offMainLoop<T>(_ work: @escaping @Sendable () -> T, done: @escaping (T) -> Void) {
        OffLoop.thread.run(named: "secretd-sync", work) { [keyring] value in
            keyring.apartWrites.whenWriteEnds { done(value) }
        }
    }
}

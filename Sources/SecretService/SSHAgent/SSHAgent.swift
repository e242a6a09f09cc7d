import FoundationEssentials
import KeychainCore
import Pinentry
import SecretCrypto
import SecretStore

/// secretd's SSH agent (RFC 9987, as OpenSSH speaks it): the keys `ssh-add` gives it are kept as
/// items of the default keyring (the login keyring), so they come back with every unlock and
/// every restart. It follows the keyring's events: while that keyring is locked it lists no key
/// and signs nothing (clients get a failure at once), and an unlock brings the keys back.
///
/// A key is an item of schema ``SSHAgentNames/schema`` in the access group
/// ``SSHAgentNames/accessGroup`` (no Secret Service client sees it unless access-groups.conf
/// makes it a member), device-only (`when-unlocked-device-only`: sync leaves it on this
/// machine), its secret the agent protocol's private key fields. The agent keeps only the
/// public parts in memory; a private key is opened from the keyring for each signature, in
/// secure memory, and wiped once it has signed.
///
/// A key may be confined to an access group of access-groups.conf (`secretctl ssh confine`,
/// kept as its ``SSHAgentNames/groupAttribute``): only clients whose identity (resolved from
/// SO_PEERCRED as the bus side resolves callers) is a member of that group see it and sign with
/// it; to every other client it does not exist, and a signature it asks for anyway is refused at
/// once, logged and recorded in the audit trail. When the group leaves access-groups.conf the
/// key stays confined to it: only `[app]` entries that still list the group may use it, until
/// the person unconfines it with the login password.
///
/// Refused with a failure: SHA-1 `ssh-rsa` signatures (a sign request without the rsa-sha2
/// flags), keys added with extension constraints (`-h` destinations, security key providers),
/// security keys and DSA keys, the agent's own lock (`ssh-add -x`), and every extension message
/// but secretd's own ``SSHAgentNames/Extension/confine`` and ``SSHAgentNames/Extension/keys``
/// (`session-bind@openssh.com` included: OpenSSH carries on without it, and with no
/// destination constraints it would bind nothing). `ssh-add -t` works: the key leaves the agent
/// and the keychain when its lifetime ends. `ssh-add -c` works when secretd.conf names a
/// pinentry: a signature asks the person first, naming the process that
/// asked (allow once, allow that program for ``consentMinutes`` until a lock, or deny);
/// without one such keys are refused.
///
/// Runs on the main loop's thread; signatures are made off the loop (an RSA key of 16384 bits
/// takes a while), and that connection waits meanwhile, no other.
final class SSHAgent {
    /// A key as listed: no secret.
    struct Identity {
        /// Its item.
        var itemID: Int64
        /// Its public key blob.
        var publicBlob: [UInt8]
        /// Its comment.
        var comment: String
        /// When it expires (seconds since 1970); nil: never.
        var expires: UInt64?
        /// Whether the person is asked before each signature (`ssh-add -c`).
        var confirm = false
        /// The access group it is confined to; nil: every client of the agent may use it.
        var group: String?

        /// Its SHA-256 fingerprint, as `ssh-add -l` shows it (a certificate's is its key's).
        var fingerprint: String { SSHPrivateKey.fingerprint(of: SSHPublicKey.plainBlob(publicBlob) ?? publicBlob) }
        /// Whether a client in `groups` may see it and sign with it.
        /// Whether a peer in `groups` may use it: a confined key by its group's members, an
        /// unconfined one by everyone but a `secretctl run` (`inRun`).
        func isUsable(by groups: Set<String>, inRun: Bool) -> Bool { group.map(groups.contains) ?? !inRun }
    }

    /// Most keys the agent keeps (a client adding more gets a failure).
    static let maximumKeys = 1024

    private let keyring: Keyring
    /// What the agent's answers about its writes wait behind.
    private let commitBarrier: CommitBarrier
    private let offLoop: OffLoop
    private let clock: () -> Date
    /// The pinentry program that asks before each use of a key added with `ssh-add -c`.
    private let pinentry: String?
    /// The access group policy in force (access-groups.conf), read at each request.
    private let policy: () -> AccessPolicy
    /// Checks the login password (throttled, off the loop), for unconfining or moving a key;
    /// nil: such changes are refused.
    private let verifyPassword: PasswordCheck?
    private var socket: SSHAgentSocket?
    /// The default keyring's keys while it is unlocked; empty while it is locked.
    private var identities: [Identity] = []
    /// The latest expiry timer; an older one that fires does nothing.
    private var expiryTimer = 0
    /// True while ``reload()`` runs (the deletions it makes need no other).
    private var reloading = false
    /// Until when each identity may use each `ssh-add -c` key without asking ("Allow for N
    /// minutes"); forgotten when the keyring locks.
    private var consents: [Consent: Date] = [:]

    /// A program's permission to use one key without being asked.
    private struct Consent: Hashable {
        /// The program, as secretd names callers (`exe:/usr/bin/ssh`).
        var identity: String
        /// The key.
        var fingerprint: String
    }

    /// How long "Allow for N minutes" lasts.
    static let consentMinutes = 10

    /// Checks a login password (throttled as unlocking is), then calls back on the loop with
    /// nil when it is right, else why not (wrong, or too many wrong ones: wait).
    typealias PasswordCheck = (_ password: SecureBytes, _ done: @escaping (String?) -> Void) -> Void

    /// The agent over `keyring`, listening under `runtimeDirectory` (`$XDG_RUNTIME_DIR`); nil when
    /// it cannot listen (logged).
    convenience init?(
        keyring: Keyring, commitBarrier: CommitBarrier, runtimeDirectory: String?, pinentry: String?,
        policy: @escaping () -> AccessPolicy, verifyPassword: @escaping PasswordCheck, runs: RunScopes
    ) {
        self.init(
            keyring: keyring, commitBarrier: commitBarrier, offLoop: .thread, clock: { Date() }, pinentry: pinentry, policy: policy,
            verifyPassword: verifyPassword)
        guard let socket = SSHAgentSocket(runtimeDirectory: runtimeDirectory, runs: runs, handler: { [weak self] message, peer, reply in
            guard let self else { return reply(SSHWriter.message(.failure)) }
            self.answer(message, from: peer, reply: reply)
        }) else { return nil }
        self.socket = socket
        Log.info("SSH agent listening on \(socket.path)")
    }

    /// The agent without a socket (in-process use), signing through `offLoop`, asking about
    /// keys added with `ssh-add -c` through `pinentry` (nil: such keys are refused), confining
    /// keys by `policy`, checking the login password with `verifyPassword` (nil: unconfining
    /// a key is refused).
    init(
        keyring: Keyring, commitBarrier: CommitBarrier, offLoop: OffLoop, clock: @escaping () -> Date, pinentry: String?,
        policy: @escaping () -> AccessPolicy = { AccessPolicy() }, verifyPassword: PasswordCheck? = nil
    ) {
        self.keyring = keyring
        self.policy = policy
        self.verifyPassword = verifyPassword
        self.commitBarrier = commitBarrier
        self.pinentry = pinentry
        self.offLoop = offLoop
        self.clock = clock
        keyring.subscribe { [weak self] event in self?.follow(event) }
        reload()
    }

    /// Stops listening and forgets the keys.
    func close() {
        socket?.close()
        socket = nil
        identities = []
    }

    // MARK: - Following the keyring

    /// What a change to the keyring means for the agent: a lock forgets the keys, an unlock or a
    /// change to a key brings the list up to date.
    private func follow(_ event: KeyringEvent) {
        guard !reloading else { return }
        switch event {
        case .locked(let collection), .unlocked(let collection):
            if isDefault(collection) { reload() }
        case .collectionDeleted, .restored:
            reload()
        case .itemCreated(let item, let collection, _, _), .itemDeleted(let item, let collection, _, _):
            if item.accessGroup == SSHAgentNames.accessGroup, isDefault(collection) { reload() }
        case .itemChanged(let before, let after, _, _, let collection):
            if before.accessGroup == SSHAgentNames.accessGroup || after.accessGroup == SSHAgentNames.accessGroup,
                isDefault(collection)
            {
                reload()
            }
        case .collectionCreated, .collectionRelabelled, .secretRead, .refused:
            break
        }
    }

    /// The keyring the keys live in: the `default` alias's, else the login keyring.
    private func defaultCollection() -> Store.CollectionRecord? {
        let name = (try? keyring.aliases())?["default"] ?? SecretServiceNames.loginCollection
        return try? keyring.collection(named: name)
    }

    private func isDefault(_ collection: Store.CollectionRecord) -> Bool {
        defaultCollection()?.id == collection.id
    }

    /// The default keyring and its keys while it is unlocked.
    private func unlockedCollection() -> (Store.CollectionRecord, Store.ItemKeys)? {
        guard let collection = defaultCollection(), let keys = keyring[collection.id] else { return nil }
        return (collection, keys)
    }

    /// The stored keys of the unlocked default keyring, with the records they are in.
    private func storedKeys() -> [(Store.ItemRecord, ItemContents)] {
        guard let (collection, keys) = unlockedCollection() else { return [] }
        let records = (try? keyring.search([PortalNames.schemaAttribute: SSHAgentNames.schema], in: collection)) ?? []
        return records.compactMap { record in
            guard record.accessGroup == SSHAgentNames.accessGroup,
                let contents = try? keyring.readItem(record, in: collection, keys: keys)
            else { return nil }
            return (record, contents)
        }
    }

    /// Reads the list of keys again (none while the keyring is locked), and removes the keys
    /// whose lifetime is over.
    private func reload() {
        reloading = true
        defer { reloading = false }
        let now = UInt64(max(0, clock().timeIntervalSince1970))
        if unlockedCollection() == nil { consents = [:] }
        var expired: [Store.ItemRecord] = []
        identities = storedKeys().compactMap { record, contents in
            let attributes = contents.attributes
            guard let encoded = attributes[SSHAgentNames.publicKeyAttribute], let blob = Data(base64Encoded: encoded) else {
                return nil
            }
            let expires = attributes[SSHAgentNames.expiresAttribute].flatMap(UInt64.init)
            if let expires, expires <= now {
                expired.append(record)
                return nil
            }
            return Identity(
                itemID: record.id, publicBlob: Array(blob), comment: attributes[SSHAgentNames.commentAttribute] ?? "",
                expires: expires, confirm: attributes[SSHAgentNames.confirmAttribute] == "yes",
                group: attributes[SSHAgentNames.groupAttribute])
        }
        if !expired.isEmpty {
            for record in expired { delete(record, reason: "its lifetime is over") }
            commit()
        }
        scheduleExpiry(now: now)
    }

    /// Runs ``reload()`` when the next key's lifetime ends.
    private func scheduleExpiry(now: UInt64) {
        expiryTimer += 1
        guard let next = identities.compactMap(\.expires).min() else { return }
        let timer = expiryTimer
        MainLoop.after(seconds: Double(next > now ? next - now : 0) + 0.5) { [weak self] in
            guard let self, self.expiryTimer == timer else { return }
            self.reload()
        }
    }

    private func delete(_ record: Store.ItemRecord, reason: String) {
        guard let (collection, keys) = unlockedCollection() else { return }
        do {
            try keyring.deleteItem(record, in: collection, keys: keys)
            Log.info("removed SSH key \(record.id) from the agent and the keychain: \(reason)")
        } catch {
            Log.error("cannot remove SSH key \(record.id): \(error)")
        }
    }

    /// Makes the agent's writes durable before it replies, through the ``CommitBarrier`` (as the
    /// login socket's answers are); false when the commit failed (it logs why).
    @discardableResult
    private func commit() -> Bool { commitBarrier.commit() == nil }

    // MARK: - Messages

    /// Answers one agent message (its bytes after the length) from `peer`, now or, for a
    /// signature or an added key, later.
    func answer(_ message: SecureBytes, from peer: SSHAgentSocket.Peer, reply: @escaping ([UInt8]) -> Void) {
        let failure = SSHWriter.message(.failure)
        let request: SSHAgentRequest
        do {
            request = try message.withBytes { (bytes) throws(SSHReader.Failure) -> SSHAgentRequest in try SSHAgentRequest.parse(bytes) }
        } catch {
            Log.warning("refused a malformed SSH agent message: \(error)")
            return reply(failure)
        }
        // It may write (an added, removed or confined key): not while a write off the loop is.
        keyring.apartWrites.whenWriteEnds { [self] in
            keyring.acting(as: peer.accessor) { answer(request, from: peer, reply: reply) }
        }
    }

    /// Answers `request` for `peer` (the keyring's accessor).
    private func answer(_ request: SSHAgentRequest, from peer: SSHAgentSocket.Peer, reply: @escaping ([UInt8]) -> Void) {
        let failure = SSHWriter.message(.failure)
        switch request {
        case .listKeys:
            reply(identitiesAnswer(for: peer))
        case .sign(let blob, let data, let flags):
            sign(blob, data: data, flags: flags, for: peer, reply: reply)
        case .add(let key, let comment, let constraints):
            add(key, comment: comment, constraints: constraints) { reply($0 ? SSHWriter.message(.success) : failure) }
        case .remove(let blob):
            reply(remove(for: peer) { $0.publicBlob == blob } ? SSHWriter.message(.success) : failure)
        case .removeAll:
            reply(remove(for: peer) { _ in true } || unlockedCollection() != nil ? SSHWriter.message(.success) : failure)
        case .confine(let key, let group, let password):
            confine(key, to: group, password: password, for: peer, reply: reply)
        case .listAll:
            reply(allKeysAnswer(for: peer))
        case .refused(let reason):
            Log.info("refused an SSH agent request: \(reason)")
            reply(failure)
        }
    }

    /// The keys `peer` may use, or none while the keyring is locked; as many as fit in one message.
    private func identitiesAnswer(for peer: SSHAgentSocket.Peer) -> [UInt8] {
        let groups = groups(of: peer)
        return keysMessage(.identitiesAnswer, withGroups: false) { $0.isUsable(by: groups, inRun: peer.run != nil) }
    }

    /// A message of type `type` with the unexpired keys `include` picks (none while the keyring
    /// is locked), as many as fit: a count, then each key's blob and comment, and with
    /// `withGroups` its group (empty: unconfined).
    private func keysMessage(_ type: SSHAgentNames.Message, withGroups: Bool, including include: (Identity) -> Bool) -> [UInt8] {
        let now = UInt64(max(0, clock().timeIntervalSince1970))
        var size = 9
        let listed = identities.filter { ($0.expires ?? .max) > now && include($0) }.prefix { identity in
            size += 8 + identity.publicBlob.count + identity.comment.utf8.count + (withGroups ? 4 + (identity.group?.utf8.count ?? 0) : 0)
            return size <= SSHAgentNames.maximumMessageLength
        }
        return SSHWriter.message(type) { writer in
            writer.uint32(UInt32(listed.count))
            for identity in listed {
                writer.string(identity.publicBlob)
                writer.string(identity.comment)
                if withGroups { writer.string(identity.group ?? "") }
            }
        }
    }

    /// Signs `data` with the key `blob` names, off the loop, once the person allowed it for a key
    /// added with `ssh-add -c`; a failure at once when the keyring is locked or the key is not
    /// the agent's.
    private func sign(
        _ blob: [UInt8], data: [UInt8], flags: UInt32, for peer: SSHAgentSocket.Peer, reply: @escaping ([UInt8]) -> Void
    ) {
        let now = clock()
        guard let identity = listed(blob), unlockedCollection() != nil else { return reply(SSHWriter.message(.failure)) }
        guard let identity = usable(identity, by: peer) else { return reply(SSHWriter.message(.failure)) }
        let fingerprint = identity.fingerprint
        let consent = peer.identity.map { Consent(identity: $0.description, fingerprint: fingerprint) }
        guard identity.confirm, consent.flatMap({ consents[$0] }).map({ $0 <= now }) ?? true else {
            return signAllowed(blob, data: data, flags: flags, for: peer, reply: reply)
        }
        guard let pinentry else { return reply(SSHWriter.message(.failure)) }
        let name = identity.comment.isEmpty ? fingerprint : "“\(identity.comment)” (\(fingerprint))"
        let description = "\(peer.description) wants to sign with the SSH key \(name)."
        let remember = consent != nil
        offLoop.run(named: "ssh-confirm", {
            Pinentry.choose(
                program: pinentry, title: "Use SSH key", description: description, ok: "Allow once",
                notOK: remember ? "Allow for \(Self.consentMinutes) minutes" : "Allow once", cancel: "Deny")
        }, done: { [weak self] choice in
            guard let self else { return reply(SSHWriter.message(.failure)) }
            self.keyring.acting(as: peer.accessor) {
                switch choice {
                case .ok:
                    self.signAllowed(blob, data: data, flags: flags, for: peer, reply: reply)
                case .notOK:
                    if let consent { self.consents[consent] = self.clock().addingTimeInterval(Double(Self.consentMinutes * 60)) }
                    self.signAllowed(blob, data: data, flags: flags, for: peer, reply: reply)
                case .cancelled, .failed:
                    Log.info("no signature with SSH key \(identity.itemID) for \(peer.description): the person did not allow it (\(choice))")
                    self.keyring.refused(AccessRefusal(
                        route: "ssh-agent sign", reason: "the person did not allow it",
                        item: try? self.keyring.item(id: identity.itemID), collection: self.unlockedCollection()?.0))
                    reply(SSHWriter.message(.failure))
                }
            }
        })
    }

    /// The listed key whose public blob is `blob`, unless its lifetime is over.
    private func listed(_ blob: [UInt8]) -> Identity? {
        let now = UInt64(max(0, clock().timeIntervalSince1970))
        return identities.first { $0.publicBlob == blob && ($0.expires ?? .max) > now }
    }

    /// `identity` when `peer` may use it (it is unconfined, or `peer` is a member of its group);
    /// else nil, after logging the refusal and recording it in the audit trail.
    private func usable(_ identity: Identity, by peer: SSHAgentSocket.Peer) -> Identity? {
        guard !identity.isUsable(by: groups(of: peer), inRun: peer.run != nil) else { return identity }
        let reason = identity.group.map { "\(peer.name) is not a member of the access group “\($0)”" }
            ?? "\(peer.name) may use only the SSH keys confined to its run's group"
        Log.info("refused to sign with SSH key \(identity.itemID) (\(identity.fingerprint)) for \(peer.description): \(reason)")
        keyring.refused(AccessRefusal(
            route: "ssh-agent sign", reason: reason, item: try? keyring.item(id: identity.itemID), collection: unlockedCollection()?.0))
        return nil
    }

    /// The access groups `peer` belongs to under the policy in force (none when it could not
    /// be identified).
    private func groups(of peer: SSHAgentSocket.Peer) -> Set<String> {
        if let run = peer.run { return run.ended ? [] : Set(run.group.map { [$0] } ?? []) }
        return peer.identity.map { Set(policy().membership(of: $0).groups) } ?? []
    }

    /// Opens the key `blob` names from the keyring (still unlocked, the key still there, still
    /// usable by `peer`) and signs off the loop; the key is wiped once it has signed.
    private func signAllowed(
        _ blob: [UInt8], data: [UInt8], flags: UInt32, for peer: SSHAgentSocket.Peer, reply: @escaping ([UInt8]) -> Void
    ) {
        guard let listed = listed(blob), let identity = usable(listed, by: peer), let (collection, keys) = unlockedCollection(),
            let record = try? keyring.item(id: identity.itemID), record.collectionID == collection.id
        else { return reply(SSHWriter.message(.failure)) }
        let key: SSHPrivateKey
        do {
            let contents = try keyring.readSecret(record, in: collection, keys: keys, route: "ssh-agent sign")
            key = try contents.secret.withBytes { (bytes) throws(SSHPrivateKey.Failure) -> SSHPrivateKey in
                var reader = SSHReader(bytes)
                return try SSHPrivateKey.read(&reader)
            }
        } catch {
            Log.error("cannot open SSH key \(record.id): \(error)")
            return reply(SSHWriter.message(.failure))
        }
        let box = UncheckedBox((key, data, flags))
        offLoop.run(named: "ssh-sign", { () -> Result<[UInt8], SSHPrivateKey.Failure> in
            let (key, data, flags) = box.value
            return Result { () throws(SSHPrivateKey.Failure) in try key.sign(data, flags: flags) }
        }, done: { result in
            switch result {
            case .success(let signature):
                reply(SSHWriter.message(.signResponse) { $0.string(signature) })
            case .failure(let failure):
                Log.info("refused to sign with SSH key \(record.id): \(failure)")
                reply(SSHWriter.message(.failure))
            }
        })
    }

    /// Checks `key` off the loop (its private part must sign for its public one), then keeps it in
    /// the keyring, replacing a stored key with the same public key; `done(false)` while the
    /// keyring is locked or when the key is refused or cannot be stored.
    private func add(_ key: SSHAgentRequest.AddedKey, comment: String, constraints: SSHAgentRequest.Constraints, done: @escaping (Bool) -> Void) {
        guard unlockedCollection() != nil else {
            Log.info("refused to add an SSH key: the keyring is locked")
            return done(false)
        }
        guard !constraints.confirm || pinentry != nil else {
            Log.info("refused to add an SSH key that asks before each use: no pinentry is configured (secretd.conf)")
            return done(false)
        }
        let box = UncheckedBox(key)
        offLoop.run(named: "ssh-add", { () -> Result<SSHPrivateKey, SSHPrivateKey.Failure> in
            Result { () throws(SSHPrivateKey.Failure) in
                let parsed = try box.value.fields.withBytes { (bytes) throws(SSHPrivateKey.Failure) -> SSHPrivateKey in
                    var reader = SSHReader(bytes)
                    let parsed = try SSHPrivateKey.read(&reader)
                    guard reader.isAtEnd else { throw .malformed("bytes after the key's fields") }
                    return parsed
                }
                try parsed.checkConsistency()
                return parsed
            }
        }, done: { [weak self] result in
            guard let self else { return done(false) }
            switch result {
            case .success(let parsed):
                self.keyring.apartWrites.whenWriteEnds {
                    done(self.keep(parsed, fields: key.fields, comment: comment, constraints: constraints))
                }
            case .failure(let failure):
                Log.info("refused to add an SSH key: \(failure)")
                done(false)
            }
        })
    }

    /// Stores a checked key; false while the keyring is locked or when it cannot be stored.
    private func keep(_ parsed: SSHPrivateKey, fields: SecureBytes, comment: String, constraints: SSHAgentRequest.Constraints) -> Bool {
        guard let (collection, keys) = unlockedCollection() else {
            Log.info("refused to add an SSH key: the keyring is locked")
            return false
        }
        let blob = parsed.publicBlob
        let encoded = Data(blob).base64EncodedString()
        // The fingerprint `ssh-add -l` shows: a certificate's is its key's.
        let fingerprint = SSHPrivateKey.fingerprint(of: parsed.plainBlob)
        // The stored key with the same public blob (a key and its certificate share the
        // fingerprint), found through the attribute index.
        let existing = ((try? keyring.search(
            [PortalNames.schemaAttribute: SSHAgentNames.schema, SSHAgentNames.fingerprintAttribute: fingerprint], in: collection)) ?? [])
            .lazy.compactMap { record -> (Store.ItemRecord, ItemContents)? in
                guard record.accessGroup == SSHAgentNames.accessGroup,
                    let contents = try? self.keyring.readItem(record, in: collection, keys: keys),
                    contents.attributes[SSHAgentNames.publicKeyAttribute] == encoded
                else { return nil }
                return (record, contents)
            }.first
        guard existing != nil || identities.count < Self.maximumKeys else {
            Log.warning("refused to add an SSH key: the agent keeps \(Self.maximumKeys) already")
            return false
        }
        var attributes = [
            PortalNames.schemaAttribute: SSHAgentNames.schema,
            AccessGroupNames.attribute: SSHAgentNames.accessGroup,
            ItemAccessibility.attribute: ItemAccessibility.whenUnlockedDeviceOnly.rawValue,
            SSHAgentNames.typeAttribute: parsed.typeName,
            SSHAgentNames.fingerprintAttribute: fingerprint,
            SSHAgentNames.publicKeyAttribute: encoded,
            SSHAgentNames.commentAttribute: comment,
        ]
        if let lifetime = constraints.lifetime {
            attributes[SSHAgentNames.expiresAttribute] = String(UInt64(max(0, clock().timeIntervalSince1970)) + UInt64(lifetime))
        }
        if constraints.confirm { attributes[SSHAgentNames.confirmAttribute] = "yes" }
        // Added again, a confined key stays confined (whoever adds it).
        attributes[SSHAgentNames.groupAttribute] = existing?.1.attributes[SSHAgentNames.groupAttribute]
        let contents = ItemContents(
            label: comment.isEmpty ? "SSH key" : "SSH key: \(comment)", attributes: attributes, secret: fields,
            contentType: SSHAgentNames.contentType)
        do {
            if let (record, _) = existing {
                _ = try keyring.updateItem(record, in: collection, keys: keys, contents: contents)
            } else {
                _ = try keyring.createItem(in: collection, keys: keys, contents: contents, creator: "ssh-agent")
            }
        } catch {
            Log.error("cannot keep an SSH key in the keyring: \(error)")
            return false
        }
        return commit()
    }

    /// Removes the keys `peer` may use that `matching` picks from the agent and the keyring;
    /// false when none was removed (or the keyring is locked).
    private func remove(for peer: SSHAgentSocket.Peer, matching: (Identity) -> Bool) -> Bool {
        guard unlockedCollection() != nil else { return false }
        let groups = groups(of: peer)
        let chosen = identities.filter { $0.isUsable(by: groups, inRun: peer.run != nil) && matching($0) }
        guard !chosen.isEmpty else { return false }
        for identity in chosen {
            if let record = try? keyring.item(id: identity.itemID) { delete(record, reason: "asked by a client") }
        }
        return commit()
    }

    // MARK: - Confinement

    /// Confines the key `name` names (its fingerprint, or its comment when that names one key;
    /// a key and its certificate together) to `group`, or unconfines it (nil), for `peer`
    /// (`secretctl ssh confine`). Only the person's own programs may (unconfined, outside a
    /// sandbox), only to a group access-groups.conf defines, and unconfining or moving a
    /// confined key needs the login password. Replies success, or the extension failure with
    /// why.
    private func confine(
        _ name: String, to group: String?, password: SecureBytes?, for peer: SSHAgentSocket.Peer, reply: @escaping ([UInt8]) -> Void
    ) {
        let verb = group.map { "confine an SSH key to “\($0)”" } ?? "unconfine an SSH key"
        func refuse(_ reason: String) {
            Log.info("refused to \(verb) for \(peer.description): \(reason)")
            reply(SSHWriter.message(.extensionFailure) { $0.string(Array(reason.utf8)) })
        }
        let policy = policy()
        guard isOwnProgram(peer, under: policy) else { return refuse(Self.ownProgramsOnly) }
        guard unlockedCollection() != nil else { return refuse("the login keyring is locked") }
        let printable = SSHAgentRequest.printable(name)
        let chosen = identities.filter { $0.fingerprint == name || $0.comment == name }
        guard let first = chosen.first else { return refuse("the agent has no key \(printable)") }
        guard chosen.allSatisfy({ $0.fingerprint == first.fingerprint }) else {
            return refuse("several keys have the comment \(printable); name one by its fingerprint")
        }
        if let group, policy.group(group) == nil {
            return refuse("\(AccessPolicy.fileName) defines no group “\(SSHAgentRequest.printable(group))”")
        }
        let apply = { [weak self] in
            guard let self else { return reply(SSHWriter.message(.failure)) }
            guard self.setGroup(group, of: chosen) else { return refuse("the key could not be changed (see the log)") }
            Log.info("\(group.map { "confined SSH key \(first.fingerprint) to the access group \($0)" } ?? "unconfined SSH key \(first.fingerprint)") for \(peer.description)")
            reply(SSHWriter.message(.success))
        }
        // Narrowing who may use a key needs nothing more; widening it needs the login password.
        guard let current = chosen.compactMap(\.group).first, current != group else { return apply() }
        guard let password, let verifyPassword else {
            return refuse("the key is confined to “\(current)”: unconfining or moving it needs the login password")
        }
        verifyPassword(password) { failure in
            guard let failure else { return apply() }
            refuse("the login password was not accepted: \(failure)")
        }
    }

    /// Why a program that may not manage confinement is refused.
    private static let ownProgramsOnly = "only your own programs may, unconfined and outside a sandbox"

    /// Whether `peer` is one of the person's own programs: identified, confined by no `[app]`
    /// entry, outside a sandbox (as ``CallerRule/unconfined`` admits bus callers).
    private func isOwnProgram(_ peer: SSHAgentSocket.Peer, under policy: AccessPolicy) -> Bool {
        guard let caller = peer.identity, peer.run == nil else { return false }
        return CallerRule.isUnconfinedHost(caller, confined: policy.membership(of: caller).confined)
    }

    /// Every key with its group, confined or not, for the person's own programs (none while
    /// the keyring is locked; as many as fit in one message); the extension failure for others.
    private func allKeysAnswer(for peer: SSHAgentSocket.Peer) -> [UInt8] {
        guard isOwnProgram(peer, under: policy()) else {
            Log.info("refused to list every SSH key for \(peer.description): \(Self.ownProgramsOnly)")
            return SSHWriter.message(.extensionFailure) { $0.string(Array(Self.ownProgramsOnly.utf8)) }
        }
        return keysMessage(.success, withGroups: true) { _ in true }
    }

    /// Writes `group` (nil: none) into the items of `chosen`; false when the keyring is locked
    /// or an item cannot be changed (logged).
    private func setGroup(_ group: String?, of chosen: [Identity]) -> Bool {
        guard let (collection, keys) = unlockedCollection() else { return false }
        do {
            for identity in chosen {
                guard let record = try keyring.item(id: identity.itemID) else { continue }
                var contents = try keyring.readItem(record, in: collection, keys: keys)
                contents.attributes[SSHAgentNames.groupAttribute] = group
                _ = try keyring.updateItem(record, in: collection, keys: keys, contents: contents)
            }
        } catch {
            Log.error("cannot change the access group of an SSH key: \(error)")
            return false
        }
        return commit()
    }
}

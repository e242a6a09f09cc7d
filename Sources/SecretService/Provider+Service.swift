// org.freedesktop.Secret.Service and gnome-keyring's InternalUnsupportedGuiltRiddenInterface

import KeychainCore
import FoundationEssentials
import Glibc
import SecretCrypto
import SecretStore
import DBusValues

extension Introspection {
    /// org.freedesktop.Secret.Service, at `/org/freedesktop/secrets`.
    static let serviceInterface = BusInterface(name: service, objects: .service, methods: [
        Method(name: "OpenSession", rule: .anyClient, arguments: [Argument(name: "algorithm", type: "s"), Argument(name: "input", type: "v")],
               results: [Argument(name: "output", type: "v"), Argument(name: "result", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   try daemon.openSession(algorithm: call.argument(0), input: call.argument(1), sender: call.sender)
               }),
        Method(name: "CreateCollection", rule: .anyClient, arguments: [Argument(name: "properties", type: "a{sv}"), Argument(name: "alias", type: "s")],
               results: [Argument(name: "collection", type: "o"), Argument(name: "prompt", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   try daemon.createCollection(properties: call.argument(0), alias: call.argument(1), sender: call.sender)
               }),
        Method(name: "SearchItems", rule: .anyClient, arguments: [Argument(name: "attributes", type: "a{ss}")],
               results: [Argument(name: "unlocked", type: "ao"), Argument(name: "locked", type: "ao")],
               handler: .now { daemon, call throws(SecretServiceError) in try daemon.searchAll(call.argument(0), for: call.sender).get() }),
        Method(name: "Unlock", rule: .anyClient, arguments: [Argument(name: "objects", type: "ao")],
               results: [Argument(name: "unlocked", type: "ao"), Argument(name: "prompt", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   try daemon.unlock(call.argument(0, as: [ObjectPath].self).map(\.path), sender: call.sender).get()
               }),
        Method(name: "Lock", rule: .unconfined, arguments: [Argument(name: "objects", type: "ao")],
               results: [Argument(name: "locked", type: "ao"), Argument(name: "Prompt", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   try daemon.lock(call.argument(0, as: [ObjectPath].self).map(\.path), sender: call.sender).get()
               }),
        Method(name: "GetSecrets", rule: .anyClient, arguments: [Argument(name: "items", type: "ao"), Argument(name: "session", type: "o")],
               results: [Argument(name: "secrets", type: "a{o\(secret)}")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   try daemon.getSecrets(
                       call.argument(0, as: [ObjectPath].self).map(\.path), sessionPath: call.argument(1, as: ObjectPath.self).path,
                       sender: call.sender
                   ).get()
               }),
        Method(name: "ReadAlias", rule: .anyClient, arguments: [Argument(name: "name", type: "s")], results: [Argument(name: "collection", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   let path = try daemon.resolveAlias(call.argument(0)).map { ObjectPaths.collection($0.name) } ?? ObjectPaths.none
                   return .tuple([.objectPath(path)])
               }),
        Method(name: "SetAlias", rule: .unconfined, arguments: [Argument(name: "name", type: "s"), Argument(name: "collection", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   try daemon.setAlias(call.argument(0), call.argument(1, as: ObjectPath.self).path).get()
               }),
    ], properties: [
        Property(name: "Collections", type: "ao", read: { daemon, _ in .objectPaths(daemon.collectionPaths()) }),
    ], signals: [
        Signal(name: "CollectionCreated", arguments: [Argument(name: "collection", type: "o")]),
        Signal(name: "CollectionDeleted", arguments: [Argument(name: "collection", type: "o")]),
        Signal(name: "CollectionChanged", arguments: [Argument(name: "collection", type: "o")]),
    ])

    /// org.freedesktop.Secret.Session: a client's session, opened by `OpenSession`.
    static let sessionInterface = BusInterface(name: session, objects: .session, methods: [
        Method(name: "Close", rule: .objectOwner, handler: .now { daemon, call throws(SecretServiceError) in
            if case .session(let id) = call.target { daemon.sessions.remove(id) }
            return .tuple([])
        }),
    ])

    /// gnome-keyring's extension for password-based unlock, creation and change; its password
    /// methods answer once the key derivation, which runs off the main loop (``PasswordChecks``),
    /// is done.
    static let gnomeExtensionInterface = BusInterface(name: gnomeExtension, objects: .service, methods: [
        Method(name: "ChangeWithMasterPassword", rule: .unconfined, arguments: [
            Argument(name: "collection", type: "o"), Argument(name: "original", type: secret), Argument(name: "master", type: secret),
        ], handler: .later { daemon, call, reply throws(SecretServiceError) in try daemon.changeWithMasterPassword(call, reply: reply) }),
        Method(name: "ChangeWithPrompt", rule: .unconfined, arguments: [Argument(name: "collection", type: "o")], results: [Argument(name: "prompt", type: "o")],
               handler: .later { daemon, call, reply throws(SecretServiceError) in
                   let path = try call.argument(0, as: ObjectPath.self).path
                   guard let collection = daemon.collection(at: path), collection.name != Provider.sessionName else {
                       throw .noSuchObject("no collection \(path) with a password")
                   }
                   reply(daemon.addPrompt(Prompt(owner: call.sender, action: .changePassword(collection))).map { .tuple([.objectPath($0)]) })
               }),
        Method(name: "CreateWithMasterPassword", rule: .unconfined, arguments: [Argument(name: "attributes", type: "a{sv}"), Argument(name: "master", type: secret)],
               results: [Argument(name: "collection", type: "o")],
               handler: .later { daemon, call, reply throws(SecretServiceError) in
                   let properties = try call.argument(0, as: [String: DBusValue].self)
                   guard let label = properties[SecretServiceNames.Property.collectionLabel].map(\.string) ?? "Keyring" else {
                       throw .invalidArgs("\(SecretServiceNames.Property.collectionLabel) must be a string (s)")
                   }
                   let (password, _) = try daemon.decodeSecret(call.argument(1), from: call.sender).get()
                   daemon.createCollection(label: label, password: password) { reply($0.map { .tuple([.objectPath($0)]) }) }
               }),
        Method(name: "UnlockWithMasterPassword", rule: .anyClient, arguments: [Argument(name: "collection", type: "o"), Argument(name: "master", type: secret)],
               handler: .later { daemon, call, reply throws(SecretServiceError) in
                   let path = try call.argument(0, as: ObjectPath.self).path
                   guard let collection = daemon.collection(at: path) else { throw .noSuchObject("no collection \(path)") }
                   let (password, _) = try daemon.decodeSecret(call.argument(1), from: call.sender).get()
                   daemon.unlock(collection, password: password) { reply($0.map { .tuple([]) }) }
               }),
    ])

    /// secretd's own: lock every keyring, after-first-unlock items too.
    static let lockingInterface = BusInterface(name: locking, objects: .service, methods: [
        Method(name: "LockAll", rule: .unconfined, handler: .now { daemon, _ throws(SecretServiceError) in
            daemon.lockAll(reason: "on request", keepingAfterFirstUnlock: false)
            return .tuple([])
        }),
    ])
}

extension Provider {
    /// `OpenSession`: a session of `algorithm` (plain, or dh-ietf1024-sha256-aes128-cbc-pkcs7
    /// with the client's public key as `input`).
    fileprivate func openSession(algorithm: String, input: DBusValue, sender: String) throws(SecretServiceError) -> DBusValue {
        let (session, output) = try Session.open(algorithm: algorithm, input: input, owner: sender).get()
        return .tuple([output, .objectPath(sessions.add(session))])
    }

    /// `CreateCollection`: the collection an alias names already, or a prompt that asks for the
    /// new one's password.
    fileprivate func createCollection(properties: [String: DBusValue], alias: String, sender: String) throws(SecretServiceError) -> DBusValue {
        if !alias.isEmpty, let existing = resolveAlias(alias) {
            return .tuple([.objectPath(ObjectPaths.collection(existing.name)), .objectPath(ObjectPaths.none)])
        }
        guard let label = properties[SecretServiceNames.Property.collectionLabel].map(\.string) ?? "Keyring" else {
            throw .invalidArgs("\(SecretServiceNames.Property.collectionLabel) must be a string (s)")
        }
        guard label.utf8.count <= KeychainLimits.textSize, alias.isEmpty || SecretServiceNames.isAliasName(alias),
            alias != Self.sessionName
        else {
            throw .invalidArgs("that label or alias cannot be used: a label is at most \(KeychainLimits.textSize) bytes, \(Self.aliasRule)")
        }
        // A new collection needs a password, which needs a prompt.
        let prompt = try addPrompt(Prompt(owner: sender, action: .createCollection(label: label, alias: alias))).get()
        return .tuple([.objectPath(ObjectPaths.none), .objectPath(prompt)])
    }

    /// `ChangeWithMasterPassword`: the collection's password changes from the original to the
    /// new one, which must open it.
    fileprivate func changeWithMasterPassword(
        _ call: AdmittedCall, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) throws(SecretServiceError) {
        let path = try call.argument(0, as: ObjectPath.self).path
        guard let collection = collection(at: path) else { throw .noSuchObject("no collection \(path)") }
        guard collection.name != Self.sessionName else { throw .invalidArgs("the session keyring has no password") }
        let (original, _) = try decodeSecret(call.argument(1), from: call.sender).get()
        let (master, _) = try decodeSecret(call.argument(2), from: call.sender).get()
        changePassword(of: collection, from: original, to: master) { result in
            reply(result.map { .tuple([]) }.mapError { error in
                error == .accessDenied("the password is wrong") ? .accessDenied("the original password is wrong") : error
            })
        }
    }

    /// Items of every collection with `attributes`, that `sender` may see; items of `ask`
    /// groups it is not allowed into are listed as locked.
    fileprivate func searchAll(_ attributes: [String: String], for sender: String) -> Result<DBusValue, SecretServiceError> {
        do {
            let collections = Dictionary(uniqueKeysWithValues: try store.collections().map { ($0.id, $0) })
            var unlocked: [String] = []
            var locked: [String] = []
            for (item, access) in visible(try searchItems(attributes), for: sender) {
                guard let collection = collections[item.collectionID] else { continue }
                let path = ObjectPaths.item(collection.name, item.id)
                if keyring.opening(item) == nil || access != .full { locked.append(path) } else { unlocked.append(path) }
            }
            return .success(.tuple([.objectPaths(unlocked), .objectPaths(locked)]))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    fileprivate func getSecrets(_ paths: [String], sessionPath: String, sender: String) -> Result<DBusValue, SecretServiceError> {
        session(at: sessionPath, for: sender).flatMap { session in
            var entries: [DBusValue.Entry] = []
            for path in paths {
                guard let (item, collection, access) = visibleItem(at: path, for: sender), access == .full,
                    let key = keyring.opening(item)
                else { continue }
                do {
                    let contents = try store.readItem(item, in: collection, keys: key)
                    let encoded = session.encode(contents, sessionPath: sessionPath)
                    guard case .success(let secret) = encoded else { return encoded }
                    entries.append(.init(key: .objectPath(path), value: secret))
                } catch {
                    return .failure(storeFailure(error))
                }
            }
            return .success(.tuple([.dictionary(key: "o", value: "(oayays)", entries)]))
        }
    }

    /// Unlocks collections (by their own paths or their items'), and asks about `ask` groups
    /// of the items the caller is not allowed into; one prompt does both.
    fileprivate func unlock(_ paths: [String], sender: String) -> Result<DBusValue, SecretServiceError> {
        var unlocked: [String] = []
        var waiting: [String] = []
        var locked: [Store.CollectionRecord] = []
        var groups: [String] = []
        let caller = callers[sender]
        for path in paths {
            var collection = collection(at: path)
            var group: String?
            var opensAlready = false  // an after-first-unlock item after an ordinary lock
            if collection == nil, let (item, itemCollection, access) = visibleItem(at: path, for: sender) {
                collection = itemCollection
                if access == .askable { group = item.accessGroup }
                opensAlready = keyring.opening(item) != nil
            }
            guard let collection else { continue }
            if let group, caller?.denied.contains(group) == true { continue }  // the person said no already
            if (keyring.isLocked(collection) && !opensAlready) || group != nil {
                waiting.append(path)
                if keyring.isLocked(collection), !opensAlready, !locked.contains(where: { $0.id == collection.id }) { locked.append(collection) }
                if let group, !groups.contains(group) { groups.append(group) }
            } else {
                unlocked.append(path)
            }
        }
        guard !locked.isEmpty || !groups.isEmpty else {
            return .success(.tuple([.objectPaths(unlocked), .objectPath(ObjectPaths.none)]))
        }
        return addPrompt(Prompt(owner: sender, action: .unlock(collections: locked, groups: groups, objects: waiting)))
            .map { .tuple([.objectPaths(unlocked), .objectPath($0)]) }
    }

    fileprivate func lock(_ paths: [String], sender: String) -> Result<DBusValue, SecretServiceError> {
        var locked: [String] = []
        for path in paths {
            guard let collection = collection(at: path) ?? visibleItem(at: path, for: sender)?.1 else { continue }
            if keyring.lock(collection) {
                Log.info("locked the \(collection.name) keyring")
            }
            if keyring.isLocked(collection) || collection.name == Self.sessionName { locked.append(path) }
        }
        return .success(.tuple([.objectPaths(locked), .objectPath(ObjectPaths.none)]))
    }

    /// What SetAlias and CreateCollection tell a client whose alias ``SecretServiceNames/isAliasName(_:)`` refuses.
    static let aliasRule = "an alias is 1 to 64 ASCII letters, digits or _, and not session"

    fileprivate func setAlias(_ alias: String, _ path: String) -> Result<DBusValue, SecretServiceError> {
        guard SecretServiceNames.isAliasName(alias), alias != Self.sessionName else {
            return .failure(.invalidArgs("that alias cannot be set: \(Self.aliasRule)"))
        }
        do {
            if path == ObjectPaths.none {
                try keyring.setAlias(alias, to: nil)
            } else {
                guard let collection = collection(at: path) else { return .failure(.noSuchObject("no collection \(path)")) }
                try keyring.setAlias(alias, to: collection)
            }
            return .success(.tuple([]))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    /// Unlocks `collection` with `password` through ``PasswordChecks`` (one throttle per
    /// keyring, the derivation off the main loop); `completion` runs on the main loop. An
    /// unlocked collection stays as it is.
    func unlock(
        _ collection: Store.CollectionRecord, password: SecureBytes, origin: PasswordChecks.Origin = .client,
        completion: @escaping (Result<Void, SecretServiceError>) -> Void
    ) {
        if !keyring.isLocked(collection) { return completion(.success(())) }
        passwordChecks.open(collection, with: password, origin: origin) { [weak self] result in
            guard let self else { return }
            completion(result.map { key in
                guard self.keyring.isLocked(collection) else { return }  // unlocked meanwhile
                self.keyring.unlocked(collection, with: key)
                Log.info("unlocked the \(collection.name) keyring")
            })
        }
    }

    /// Re-wraps `collection`'s master key under `new` once `old` opens it (both derivations off
    /// the main loop, the first through the keyring's throttle).
    func changePassword(
        of collection: Store.CollectionRecord, from old: SecureBytes, to new: SecureBytes,
        completion: @escaping (Result<Void, SecretServiceError>) -> Void
    ) {
        guard new.count > 0 else { return completion(.failure(.invalidArgs("the new password is empty"))) }
        passwordChecks.open(collection, with: old, origin: .client, purpose: " (changing its password)") { [weak self] opened in
            switch opened {
            case .failure(let refusal): completion(.failure(refusal))
            case .success(let itemKeys): self?.rewrap(collection, keys: itemKeys, to: new, completion: completion)
            }
        }
    }

    /// Wraps the master key of `keys` (`collection`'s, unlocked) under `password`, the
    /// derivation off the main loop; the store then holds the new wrapping.
    func rewrap(
        _ collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys, to password: SecureBytes,
        completion: @escaping (Result<Void, SecretServiceError>) -> Void
    ) {
        guard let master = itemKeys.master else { return completion(.failure(.isLocked("the keyring is locked"))) }
        let (parameters, uuid) = (options.kdf, collection.uuid)
        passwordChecks.derive({ Result { () throws(StoreError) in
            try WrappedKey(wrapping: master, under: password, parameters: parameters, uuid: uuid)
        } }) { [weak self] derived in
            guard let self else { return }
            completion(derived.flatMap { made in
                made.mapError { SecretServiceError(storeFailure: $0) }.flatMap { wrapped in
                    do {
                        try self.keyring.setWrappedKey(of: collection, to: wrapped)
                        // A password set since root's change wins over it.
                        if self.loginPasswordSetByRoot?.collectionID == collection.id { self.loginPasswordSetByRoot = nil }
                        Log.info("changed the password of the \(collection.name) keyring")
                        return .success(())
                    } catch {
                        return .failure(self.storeFailure(error))
                    }
                }
            })
        }
    }

    /// Checks `password` against `collection`'s through ``PasswordChecks`` without unlocking
    /// it: its item keys, for what needs them (a PIN, a TPM slot, a policy change).
    func checkPassword(
        _ password: SecureBytes, of collection: Store.CollectionRecord, purpose: String = "",
        completion: @escaping (Result<Store.ItemKeys, SecretServiceError>) -> Void
    ) {
        passwordChecks.open(collection, with: password, origin: .client, purpose: purpose, completion: completion)
    }

    /// Seconds until a client may try a password on `collection` again.
    func unlockDelay(_ collection: Store.CollectionRecord) -> TimeInterval {
        passwordChecks.wait(for: collection)
    }

    /// Creates an unlocked collection with a name made from `label` (its key derived off the
    /// main loop); `completion` gets its path.
    func createCollection(label: String, password: SecureBytes, completion: @escaping (Result<String, SecretServiceError>) -> Void) {
        guard label.utf8.count <= KeychainLimits.textSize else { return completion(.failure(.invalidArgs("the label is too long"))) }
        guard password.count > 0 else { return completion(.failure(.invalidArgs("a new keyring needs a password"))) }
        let parameters = options.kdf
        passwordChecks.derive({ Result { () throws(StoreError) in try NewCollectionKey(password: password, parameters: parameters) } }) {
            [weak self] derived in
            guard let self else { return }
            completion(derived.flatMap { made in
                made.mapError { SecretServiceError(storeFailure: $0) }.flatMap { self.createCollection(label: label, key: $0) }
            })
        }
    }

    /// Creates an unlocked collection with a name made from `label` and a key made beforehand.
    private func createCollection(label: String, key: NewCollectionKey) -> Result<String, SecretServiceError> {
        do {
            var name = ObjectPaths.name(fromLabel: label)
            var suffix = 2
            while try store.collection(named: name) != nil {
                name = ObjectPaths.name(fromLabel: label) + "_\(suffix)"
                suffix += 1
            }
            let (collection, _) = try keyring.createCollection(name: name, label: label, key: key)
            return .success(ObjectPaths.collection(collection.name))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    /// The D-Bus error for any error thrown by the store.
    func storeFailure(_ error: any Error) -> SecretServiceError {
        storeFailure(error as? StoreError ?? .crypto("unexpected error"))
    }

    /// The D-Bus error for a store failure; the detail is logged, not sent.
    func storeFailure(_ error: StoreError) -> SecretServiceError {
        SecretServiceError(storeFailure: error)
    }
}

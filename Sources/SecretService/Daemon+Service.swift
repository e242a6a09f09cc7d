// org.freedesktop.Secret.Service and gnome-keyring's InternalUnsupportedGuiltRiddenInterface

import KeychainCore
import FoundationEssentials
import Glibc
import SecretCrypto
import SecretStore
import DBusValues

extension Daemon {
    func handleService(_ call: MethodCall) -> Result<DBusValue, SecretServiceError> {
        let args = call.arguments
        switch call.method {
        case "OpenSession":
            guard let algorithm = args[0].string, let input = args[1].variant else { return .failure(.invalidArgs("(sv) expected")) }
            return Session.open(algorithm: algorithm, input: input, owner: call.sender).map { session, output in
                .tuple([output, .objectPath(sessions.add(session))])
            }
        case "SearchItems":
            guard let attributes = args[0].stringMap else { return .failure(.invalidArgs("a{ss} expected")) }
            return searchAll(attributes, for: call.sender)
        case "GetSecrets":
            guard let paths = args[0].objectPaths, let sessionPath = args[1].objectPath else {
                return .failure(.invalidArgs("(ao, o) expected"))
            }
            return getSecrets(paths, sessionPath: sessionPath, sender: call.sender)
        case "Unlock":
            guard let paths = args[0].objectPaths else { return .failure(.invalidArgs("ao expected")) }
            return unlock(paths, sender: call.sender)
        case "Lock":
            guard let paths = args[0].objectPaths else { return .failure(.invalidArgs("ao expected")) }
            return lock(paths, sender: call.sender)
        case "ReadAlias":
            guard let alias = args[0].string else { return .failure(.invalidArgs("s expected")) }
            let path = resolveAlias(alias).map { ObjectPaths.collection($0.name) } ?? ObjectPaths.none
            return .success(.tuple([.objectPath(path)]))
        case "SetAlias":
            guard let alias = args[0].string, let path = args[1].objectPath else { return .failure(.invalidArgs("(so) expected")) }
            return setAlias(alias, path)
        case "CreateCollection":
            guard let properties = args[0].variantMap, let alias = args[1].string else {
                return .failure(.invalidArgs("(a{sv}s) expected"))
            }
            if !alias.isEmpty, let existing = resolveAlias(alias) {
                return .success(.tuple([.objectPath(ObjectPaths.collection(existing.name)), .objectPath(ObjectPaths.none)]))
            }
            guard let label = properties[SecretServiceNames.Property.collectionLabel].map(\.string) ?? "Keyring" else {
                return .failure(.invalidArgs("\(SecretServiceNames.Property.collectionLabel) must be a string (s)"))
            }
            guard label.utf8.count <= KeychainLimits.textSize, alias.isEmpty || SecretServiceNames.isAliasName(alias),
                alias != Self.sessionName
            else {
                return .failure(.invalidArgs(
                    "that label or alias cannot be used: a label is at most \(KeychainLimits.textSize) bytes, \(Self.aliasRule)"))
            }
            // A new collection needs a password, which needs a prompt.
            return addPrompt(Prompt(owner: call.sender, action: .createCollection(label: label, alias: alias))).map {
                .tuple([.objectPath(ObjectPaths.none), .objectPath($0)])
            }
        default:
            return .failure(.noSuchObject("no method \(call.method)"))
        }
    }

    /// Items of every collection with `attributes`, that `sender` may see; items of `ask`
    /// groups it is not allowed into are listed as locked.
    private func searchAll(_ attributes: [String: String], for sender: String) -> Result<DBusValue, SecretServiceError> {
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

    private func getSecrets(_ paths: [String], sessionPath: String, sender: String) -> Result<DBusValue, SecretServiceError> {
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
    private func unlock(_ paths: [String], sender: String) -> Result<DBusValue, SecretServiceError> {
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

    private func lock(_ paths: [String], sender: String) -> Result<DBusValue, SecretServiceError> {
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
    private static let aliasRule = "an alias is 1 to 64 ASCII letters, digits or _, and not session"

    private func setAlias(_ alias: String, _ path: String) -> Result<DBusValue, SecretServiceError> {
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

    // MARK: - gnome-keyring extension

    /// gnome-keyring's extension; its password methods answer once the key derivation, which
    /// runs off the main loop (``PasswordChecks``), is done.
    func handleGnomeExtension(_ call: MethodCall, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        let args = call.arguments
        switch call.method {
        case "UnlockWithMasterPassword":
            guard let path = args[0].objectPath, let collection = collection(at: path) else {
                return reply(.failure(.noSuchObject("no collection \(args[0])")))
            }
            switch decodeSecret(args[1], from: call.sender) {
            case .failure(let problem): reply(.failure(problem))
            case .success(let (password, _)): unlock(collection, password: password) { reply($0.map { .tuple([]) }) }
            }
        case "CreateWithMasterPassword":
            guard let properties = args[0].variantMap else { return reply(.failure(.invalidArgs("a{sv} expected"))) }
            guard let label = properties[SecretServiceNames.Property.collectionLabel].map(\.string) ?? "Keyring" else {
                return reply(.failure(.invalidArgs("\(SecretServiceNames.Property.collectionLabel) must be a string (s)")))
            }
            switch decodeSecret(args[1], from: call.sender) {
            case .failure(let problem): reply(.failure(problem))
            case .success(let (password, _)): createCollection(label: label, password: password) { reply($0.map { .tuple([.objectPath($0)]) }) }
            }
        case "ChangeWithMasterPassword":
            guard let path = args[0].objectPath, let collection = collection(at: path) else {
                return reply(.failure(.noSuchObject("no collection \(args[0])")))
            }
            guard collection.name != Self.sessionName else { return reply(.failure(.invalidArgs("the session keyring has no password"))) }
            switch decodeSecret(args[1], from: call.sender).flatMap({ original, _ in
                decodeSecret(args[2], from: call.sender).map { master, _ in (original, master) }
            }) {
            case .failure(let problem): reply(.failure(problem))
            case .success(let (original, master)):
                changePassword(of: collection, from: original, to: master) { result in
                    reply(result.map { .tuple([]) }.mapError { error in
                        error == .accessDenied("the password is wrong") ? .accessDenied("the original password is wrong") : error
                    })
                }
            }
        case "ChangeWithPrompt":
            guard let path = args[0].objectPath, let collection = collection(at: path), collection.name != Self.sessionName else {
                return reply(.failure(.noSuchObject("no collection \(args[0]) with a password")))
            }
            reply(addPrompt(Prompt(owner: call.sender, action: .changePassword(collection))).map { .tuple([.objectPath($0)]) })
        default:
            reply(.failure(.noSuchObject("no method \(call.method)")))
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

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
                if keys.opening(item) == nil || access != .full { locked.append(path) } else { unlocked.append(path) }
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
                    let key = keys.opening(item)
                else { continue }
                do {
                    let contents = try store.readItem(item, in: collection, keys: key)
                    let encoded = session.encode(contents.secret, contentType: contents.contentType, sessionPath: sessionPath)
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
                opensAlready = keys.opening(item) != nil
            }
            guard let collection else { continue }
            if let group, caller?.denied.contains(group) == true { continue }  // the person said no already
            if (isLocked(collection) && !opensAlready) || group != nil {
                waiting.append(path)
                if isLocked(collection), !opensAlready, !locked.contains(where: { $0.id == collection.id }) { locked.append(collection) }
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
            if collection.name != Self.sessionName, keys.lock(collection) {
                Log.info("locked the \(collection.name) keyring")
            }
            if isLocked(collection) || collection.name == Self.sessionName { locked.append(path) }
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
                try store.setAlias(alias, to: nil)
            } else {
                guard let collection = collection(at: path) else { return .failure(.noSuchObject("no collection \(path)")) }
                try store.setAlias(alias, to: collection)
            }
            return .success(.tuple([]))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    // MARK: - gnome-keyring extension

    func handleGnomeExtension(_ call: MethodCall) -> Result<DBusValue, SecretServiceError> {
        let args = call.arguments
        switch call.method {
        case "UnlockWithMasterPassword":
            guard let path = args[0].objectPath, let collection = collection(at: path) else {
                return .failure(.noSuchObject("no collection \(args[0])"))
            }
            return decodeSecret(args[1], from: call.sender).flatMap { password, _ in
                unlock(collection, password: password).map { .tuple([]) }
            }
        case "CreateWithMasterPassword":
            guard let properties = args[0].variantMap else { return .failure(.invalidArgs("a{sv} expected")) }
            guard let label = properties[SecretServiceNames.Property.collectionLabel].map(\.string) ?? "Keyring" else {
                return .failure(.invalidArgs("\(SecretServiceNames.Property.collectionLabel) must be a string (s)"))
            }
            return decodeSecret(args[1], from: call.sender).flatMap { password, _ in
                createCollection(label: label, password: password).map { .tuple([.objectPath($0)]) }
            }
        case "ChangeWithMasterPassword":
            guard let path = args[0].objectPath, let collection = collection(at: path) else {
                return .failure(.noSuchObject("no collection \(args[0])"))
            }
            return decodeSecret(args[1], from: call.sender).flatMap { original, _ in
                decodeSecret(args[2], from: call.sender).flatMap { master, _ in
                    guard collection.name != Self.sessionName else { return .failure(.invalidArgs("the session keyring has no password")) }
                    do {
                        try store.changePassword(collection, from: original, to: master, parameters: options.kdf)
                        Log.info("changed the password of the \(collection.name) keyring")
                        return .success(.tuple([]))
                    } catch {
                        if (error as? StoreError) == .wrongPassword {
                            return .failure(.accessDenied("the original password is wrong"))
                        }
                        return .failure(storeFailure(error))
                    }
                }
            }
        case "ChangeWithPrompt":
            guard let path = args[0].objectPath, let collection = collection(at: path), collection.name != Self.sessionName else {
                return .failure(.noSuchObject("no collection \(args[0]) with a password"))
            }
            return addPrompt(Prompt(owner: call.sender, action: .changePassword(collection))).map { .tuple([.objectPath($0)]) }
        default:
            return .failure(.noSuchObject("no method \(call.method)"))
        }
    }

    /// Unlocks `collection` with `password`; wrong passwords make the next attempt wait longer
    /// (1 s, 2 s, 4 s … up to 60 s) and change nothing. `fromLogin`: the password came from
    /// pam_secretd.so, whose attempts wait apart from the clients' (``PasswordThrottle``).
    func unlock(_ collection: Store.CollectionRecord, password: SecureBytes, fromLogin: Bool = false) -> Result<Void, SecretServiceError> {
        if !isLocked(collection) { return .success(()) }
        return checkPassword(password, of: collection, fromLogin: fromLogin).map { key in
            keys.unlocked(collection, with: key)
            Log.info("unlocked the \(collection.name) keyring")
        }
    }

    /// Unwraps `collection`'s master key (its item keys) with `password`, refusing while the wait after earlier
    /// wrong passwords from the same source runs; a wrong password makes the next wait longer
    /// (1 s, 2 s, 4 s … up to 60 s). `purpose` ends the log line of a wrong password.
    func checkPassword(
        _ password: SecureBytes, of collection: Store.CollectionRecord, purpose: String = "", fromLogin: Bool = false
    ) -> Result<Store.ItemKeys, SecretServiceError> {
        let source = PasswordThrottle.Source(collectionID: collection.id, fromLogin: fromLogin)
        let wait = passwordThrottle.wait(for: source)
        if wait > 0 {
            return .failure(.accessDenied("too many wrong passwords; try again in \(Int(wait.rounded(.up))) s"))
        }
        do {
            let key = try store.unlock(collection, password: password)
            passwordThrottle.succeeded(collectionID: collection.id)
            return .success(key)
        } catch .wrongPassword {
            let count = passwordThrottle.failed(source)
            Log.warning("wrong password for the \(collection.name) keyring (attempt \(count))\(purpose)")
            return .failure(.accessDenied("the password is wrong"))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    /// Seconds until the next password attempt of a client on `collection` is accepted.
    func unlockDelay(_ collection: Store.CollectionRecord) -> TimeInterval {
        passwordThrottle.wait(for: PasswordThrottle.Source(collectionID: collection.id, fromLogin: false))
    }

    /// Creates an unlocked collection with a name made from `label`; returns its path.
    func createCollection(label: String, password: SecureBytes) -> Result<String, SecretServiceError> {
        guard label.utf8.count <= KeychainLimits.textSize else { return .failure(.invalidArgs("the label is too long")) }
        do {
            var name = ObjectPaths.name(fromLabel: label)
            var suffix = 2
            while try store.collection(named: name) != nil {
                name = ObjectPaths.name(fromLabel: label) + "_\(suffix)"
                suffix += 1
            }
            let (collection, key) = try store.createCollection(name: name, label: label, password: password, parameters: options.kdf)
            keys.unlocked(collection, with: key, announcing: false)
            let path = ObjectPaths.collection(name)
            announceNewCollection(path)
            return .success(path)
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
        switch error {
        case .notFound: return .noSuchObject("no such object")
        case .invalidInput(let message): return .invalidArgs(message)
        case .wrongPassword: return .accessDenied("the password is wrong")
        case .locked: return .isLocked("the keyring is locked")
        case .corrupted:
            Log.error("storage error: \(error)")
            return .failed("the item's stored data is damaged and cannot be opened; see secretd's log")
        default:
            Log.error("storage error: \(error)")
            return .incomplete
        }
    }
}

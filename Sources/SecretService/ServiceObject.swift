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
               handler: .now { provider, call throws(SecretServiceError) in
                   try ServiceObject(provider).openSession(algorithm: call.argument(0), input: call.argument(1), sender: call.sender)
               }),
        Method(name: "CreateCollection", rule: .anyClient, arguments: [Argument(name: "properties", type: "a{sv}"), Argument(name: "alias", type: "s")],
               results: [Argument(name: "collection", type: "o"), Argument(name: "prompt", type: "o")],
               handler: .now { provider, call throws(SecretServiceError) in
                   try ServiceObject(provider).createCollection(properties: call.argument(0), alias: call.argument(1), sender: call.sender)
               }),
        Method(name: "SearchItems", rule: .anyClient, arguments: [Argument(name: "attributes", type: "a{ss}")],
               results: [Argument(name: "unlocked", type: "ao"), Argument(name: "locked", type: "ao")],
               handler: .now { provider, call throws(SecretServiceError) in try ServiceObject(provider).searchAll(call.argument(0), for: call.sender).get() }),
        Method(name: "Unlock", rule: .anyClient, arguments: [Argument(name: "objects", type: "ao")],
               results: [Argument(name: "unlocked", type: "ao"), Argument(name: "prompt", type: "o")],
               handler: .now { provider, call throws(SecretServiceError) in
                   try ServiceObject(provider).unlock(call.argument(0, as: [ObjectPath].self).map(\.path), sender: call.sender).get()
               }),
        Method(name: "Lock", rule: .unconfined, arguments: [Argument(name: "objects", type: "ao")],
               results: [Argument(name: "locked", type: "ao"), Argument(name: "Prompt", type: "o")],
               handler: .now { provider, call throws(SecretServiceError) in
                   try ServiceObject(provider).lock(call.argument(0, as: [ObjectPath].self).map(\.path), sender: call.sender).get()
               }),
        Method(name: "GetSecrets", rule: .anyClient, arguments: [Argument(name: "items", type: "ao"), Argument(name: "session", type: "o")],
               results: [Argument(name: "secrets", type: "a{o\(secret)}")],
               handler: .now { provider, call throws(SecretServiceError) in
                   try ServiceObject(provider).getSecrets(
                       call.argument(0, as: [ObjectPath].self).map(\.path), sessionPath: call.argument(1, as: ObjectPath.self).path,
                       sender: call.sender
                   ).get()
               }),
        Method(name: "ReadAlias", rule: .anyClient, arguments: [Argument(name: "name", type: "s")], results: [Argument(name: "collection", type: "o")],
               handler: .now { provider, call throws(SecretServiceError) in
                   let path = try provider.resolveAlias(call.argument(0)).map { ObjectPaths.collection($0.name) } ?? ObjectPaths.none
                   return .tuple([.objectPath(path)])
               }),
        Method(name: "SetAlias", rule: .unconfined, arguments: [Argument(name: "name", type: "s"), Argument(name: "collection", type: "o")],
               handler: .now { provider, call throws(SecretServiceError) in
                   try ServiceObject(provider).setAlias(call.argument(0), call.argument(1, as: ObjectPath.self).path).get()
               }),
    ], properties: [
        Property(name: "Collections", type: "ao", read: { provider, _ in .objectPaths(provider.collectionPaths()) }),
    ], signals: [
        Signal(name: "CollectionCreated", arguments: [Argument(name: "collection", type: "o")]),
        Signal(name: "CollectionDeleted", arguments: [Argument(name: "collection", type: "o")]),
        Signal(name: "CollectionChanged", arguments: [Argument(name: "collection", type: "o")]),
    ])

    /// org.freedesktop.Secret.Session: a client's session, opened by `OpenSession`.
    static let sessionInterface = BusInterface(name: session, objects: .session, methods: [
        Method(name: "Close", rule: .objectOwner, handler: .now { provider, call throws(SecretServiceError) in
            if case .session(let id) = call.target { provider.sessions.remove(id) }
            return .tuple([])
        }),
    ])

    /// gnome-keyring's extension for password-based unlock, creation and change; its password
    /// methods answer once the key derivation, which runs off the main loop (``PasswordChecks``),
    /// is done.
    static let gnomeExtensionInterface = BusInterface(name: gnomeExtension, objects: .service, methods: [
        Method(name: "ChangeWithMasterPassword", rule: .unconfined, arguments: [
            Argument(name: "collection", type: "o"), Argument(name: "original", type: secret), Argument(name: "master", type: secret),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in try ServiceObject(provider).changeWithMasterPassword(call, reply: reply) }),
        Method(name: "ChangeWithPrompt", rule: .unconfined, arguments: [Argument(name: "collection", type: "o")], results: [Argument(name: "prompt", type: "o")],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   let path = try call.argument(0, as: ObjectPath.self).path
                   guard let collection = provider.collection(at: path), collection.name != Provider.sessionName else {
                       throw .noSuchObject("no collection \(path) with a password")
                   }
                   reply(provider.addPrompt(Prompt(owner: call.sender, action: .changePassword(collection))).map { .tuple([.objectPath($0)]) })
               }),
        Method(name: "CreateWithMasterPassword", rule: .unconfined, arguments: [Argument(name: "attributes", type: "a{sv}"), Argument(name: "master", type: secret)],
               results: [Argument(name: "collection", type: "o")],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   let properties = try call.argument(0, as: [String: DBusValue].self)
                   guard let label = properties[SecretServiceNames.Property.collectionLabel].map(\.string) ?? "Keyring" else {
                       throw .invalidArgs("\(SecretServiceNames.Property.collectionLabel) must be a string (s)")
                   }
                   let (password, _) = try provider.decodeSecret(call.argument(1), from: call.sender).get()
                   provider.createCollection(label: label, password: password) { reply($0.map { .tuple([.objectPath($0)]) }) }
               }),
        Method(name: "UnlockWithMasterPassword", rule: .anyClient, arguments: [Argument(name: "collection", type: "o"), Argument(name: "master", type: secret)],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   let path = try call.argument(0, as: ObjectPath.self).path
                   guard let collection = provider.collection(at: path) else { throw .noSuchObject("no collection \(path)") }
                   let (password, _) = try provider.decodeSecret(call.argument(1), from: call.sender).get()
                   provider.unlock(collection, password: password) { reply($0.map { .tuple([]) }) }
               }),
    ])

    /// secretd's own: lock every keyring, after-first-unlock items too.
    static let lockingInterface = BusInterface(name: locking, objects: .service, methods: [
        Method(name: "LockAll", rule: .unconfined, handler: .now { provider, _ throws(SecretServiceError) in
            provider.lockAll(reason: "on request", keepingAfterFirstUnlock: false)
            return .tuple([])
        }),
    ])
}

/// The service (org.freedesktop.Secret.Service) and its companions at the same path (sessions,
/// the GNOME extension, Locking1): sessions opened, collections created, items searched,
/// secrets read in bulk, unlocking and locking, aliases.
struct ServiceObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `OpenSession`: a session of `algorithm` (plain, or dh-ietf1024-sha256-aes128-cbc-pkcs7
    /// with the client's public key as `input`).
    fileprivate func openSession(algorithm: String, input: DBusValue, sender: String) throws(SecretServiceError) -> DBusValue {
        let (session, output) = try Session.open(algorithm: algorithm, input: input, owner: sender).get()
        return .tuple([output, .objectPath(provider.sessions.add(session))])
    }

    /// `CreateCollection`: the collection an alias names already, or a prompt that asks for the
    /// new one's password.
    fileprivate func createCollection(properties: [String: DBusValue], alias: String, sender: String) throws(SecretServiceError) -> DBusValue {
        if !alias.isEmpty, let existing = provider.resolveAlias(alias) {
            return .tuple([.objectPath(ObjectPaths.collection(existing.name)), .objectPath(ObjectPaths.none)])
        }
        guard let label = properties[SecretServiceNames.Property.collectionLabel].map(\.string) ?? "Keyring" else {
            throw .invalidArgs("\(SecretServiceNames.Property.collectionLabel) must be a string (s)")
        }
        guard label.utf8.count <= KeychainLimits.textSize, alias.isEmpty || SecretServiceNames.isAliasName(alias),
            alias != Provider.sessionName
        else {
            throw .invalidArgs("that label or alias cannot be used: a label is at most \(KeychainLimits.textSize) bytes, \(Provider.aliasRule)")
        }
        // A new collection needs a password, which needs a prompt.
        let prompt = try provider.addPrompt(Prompt(owner: sender, action: .createCollection(label: label, alias: alias))).get()
        return .tuple([.objectPath(ObjectPaths.none), .objectPath(prompt)])
    }

    /// `ChangeWithMasterPassword`: the collection's password changes from the original to the
    /// new one, which must open it.
    fileprivate func changeWithMasterPassword(
        _ call: AdmittedCall, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) throws(SecretServiceError) {
        let path = try call.argument(0, as: ObjectPath.self).path
        guard let collection = provider.collection(at: path) else { throw .noSuchObject("no collection \(path)") }
        guard collection.name != Provider.sessionName else { throw .invalidArgs("the session keyring has no password") }
        let (original, _) = try provider.decodeSecret(call.argument(1), from: call.sender).get()
        let (master, _) = try provider.decodeSecret(call.argument(2), from: call.sender).get()
        provider.changePassword(of: collection, from: original, to: master) { result in
            reply(result.map { .tuple([]) }.mapError { error in
                error == .accessDenied("the password is wrong") ? .accessDenied("the original password is wrong") : error
            })
        }
    }

    /// Items of every collection with `attributes`, that `sender` may see; items of `ask`
    /// groups it is not allowed into are listed as locked.
    fileprivate func searchAll(_ attributes: [String: String], for sender: String) -> Result<DBusValue, SecretServiceError> {
        do {
            let collections = Dictionary(uniqueKeysWithValues: try provider.keyring.collections().map { ($0.id, $0) })
            var unlocked: [String] = []
            var locked: [String] = []
            for (item, access) in provider.visible(try provider.searchItems(attributes), for: sender) {
                guard let collection = collections[item.collectionID] else { continue }
                let path = ObjectPaths.item(collection.name, item.id)
                if provider.keyring.opening(item) == nil || access != .full { locked.append(path) } else { unlocked.append(path) }
            }
            return .success(.tuple([.objectPaths(unlocked), .objectPaths(locked)]))
        } catch {
            return .failure(provider.storeFailure(error))
        }
    }

    fileprivate func getSecrets(_ paths: [String], sessionPath: String, sender: String) -> Result<DBusValue, SecretServiceError> {
        provider.session(at: sessionPath, for: sender).flatMap { session in
            var entries: [DBusValue.Entry] = []
            for path in paths {
                guard let (item, collection, access) = provider.visibleItem(at: path, for: sender), access == .full,
                    let key = provider.keyring.opening(item)
                else { continue }
                do {
                    let contents = try provider.keyring.readSecret(item, in: collection, keys: key, route: "Service.GetSecrets")
                    let encoded = session.encode(contents, sessionPath: sessionPath)
                    guard case .success(let secret) = encoded else { return encoded }
                    entries.append(.init(key: .objectPath(path), value: secret))
                } catch {
                    return .failure(provider.storeFailure(error))
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
        let caller = provider.callers[sender]
        for path in paths {
            var collection = provider.collection(at: path)
            var group: String?
            var opensAlready = false  // an after-first-unlock item after an ordinary lock
            if collection == nil, let (item, itemCollection, access) = provider.visibleItem(at: path, for: sender) {
                collection = itemCollection
                if access == .askable { group = item.accessGroup }
                opensAlready = provider.keyring.opening(item) != nil
            }
            guard let collection else { continue }
            if let group, caller?.denied.contains(group) == true { continue }  // the person said no already
            if (provider.keyring.isLocked(collection) && !opensAlready) || group != nil {
                waiting.append(path)
                if provider.keyring.isLocked(collection), !opensAlready, !locked.contains(where: { $0.id == collection.id }) { locked.append(collection) }
                if let group, !groups.contains(group) { groups.append(group) }
            } else {
                unlocked.append(path)
            }
        }
        guard !locked.isEmpty || !groups.isEmpty else {
            return .success(.tuple([.objectPaths(unlocked), .objectPath(ObjectPaths.none)]))
        }
        // Consent for new readers with nobody to ask: refused at once, saying how to allow it.
        if provider.options.configuration.pinentry == nil, let caller,
            let group = groups.first(where: { provider.isAllowedInto(caller, $0) })
        {
            let message = provider.consentMissing(caller, group)
            Log.info("refused: \(message)")
            return .failure(.accessDenied(message))
        }
        return provider.addPrompt(Prompt(owner: sender, action: .unlock(collections: locked, groups: groups, objects: waiting)))
            .map { .tuple([.objectPaths(unlocked), .objectPath($0)]) }
    }

    fileprivate func lock(_ paths: [String], sender: String) -> Result<DBusValue, SecretServiceError> {
        var locked: [String] = []
        for path in paths {
            guard let collection = provider.collection(at: path) ?? provider.visibleItem(at: path, for: sender)?.1 else { continue }
            if provider.keyring.lock(collection) {
                Log.info("locked the \(collection.name) keyring")
            }
            if provider.keyring.isLocked(collection) || collection.name == Provider.sessionName { locked.append(path) }
        }
        return .success(.tuple([.objectPaths(locked), .objectPath(ObjectPaths.none)]))
    }

    fileprivate func setAlias(_ alias: String, _ path: String) -> Result<DBusValue, SecretServiceError> {
        guard SecretServiceNames.isAliasName(alias), alias != Provider.sessionName else {
            return .failure(.invalidArgs("that alias cannot be set: \(Provider.aliasRule)"))
        }
        do {
            if path == ObjectPaths.none {
                try provider.keyring.setAlias(alias, to: nil)
            } else {
                guard let collection = provider.collection(at: path) else { return .failure(.noSuchObject("no collection \(path)")) }
                try provider.keyring.setAlias(alias, to: collection)
            }
            return .success(.tuple([]))
        } catch {
            return .failure(provider.storeFailure(error))
        }
    }

}

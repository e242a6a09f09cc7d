// org.freedesktop.impl.portal.Secret, io.github.secretd.AppKeys1
//
// The desktop portal's Secret backend (org.freedesktop.impl.portal.Secret, version 1) and
// secretd's AppKeys interface, which lists and deletes the keys it hands out.
//
// libsecret inside a Flatpak keeps the app's secrets in a file keyring under ~/.var/app/ID,
// encrypted with a key it asks the portal for; the portal frontend (xdg-desktop-portal) asks
// this backend, naming the app. Each app's key is 64 random bytes, made on its first request
// and never changed, kept as an item of the login keyring in the app's own access group.

import KeychainCore
import FoundationEssentials
import Glibc
import CProcess  // struct stat, as the modules that include <sys/stat.h> first declare it
import SecretCrypto
import SecretStore
import DBusValues

/// A `RetrieveSecret` call waiting for the person to unlock the keyring.
struct PortalRequest {
    /// The frontend's connection, which alone may close it.
    var owner: String
    /// The prompt asking for the password.
    var promptID: Int
}

extension Introspection {
    /// The desktop portal's Secret backend, at `/org/freedesktop/portal/desktop`.
    static let portalSecretInterface = BusInterface(name: portalSecret, objects: .portal, methods: [
        Method(name: "RetrieveSecret", rule: .portalFrontend, arguments: [
            Argument(name: "handle", type: "o"), Argument(name: "app_id", type: "s"), Argument(name: "fd", type: "h"),
            Argument(name: "options", type: "a{sv}"),
        ], results: [Argument(name: "response", type: "u"), Argument(name: "results", type: "a{sv}")],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   try PortalObject(provider).retrieveSecret(
                       handle: call.argument(0, as: ObjectPath.self).path, appID: call.argument(1), received: call.argument(2, as: DescriptorIndex.self).index,
                       sender: call.sender, reply: reply)
               }),
    ], properties: [
        Property(name: "version", type: "u", read: { _, _ in .uint32(1) }),
    ])

    /// A portal request handle, while its `RetrieveSecret` waits for the person.
    static let portalRequestInterface = BusInterface(name: portalRequest, objects: .portalRequest, methods: [
        Method(name: "Close", rule: .objectOwner, handler: .now { provider, call throws(SecretServiceError) in
            guard case .portalRequest(let handle) = call.target else { throw .noSuchObject("no request \(call.call.path)") }
            return try PortalObject(provider).closePortalRequest(handle).get()
        }),
    ])

    /// secretd's own: the portal's app keys, for unconfined clients outside a sandbox (secretctl).
    static let appKeysInterface = BusInterface(name: appKeys, objects: .service, methods: [
        Method(name: "List", rule: .unconfined, results: [Argument(name: "keys", type: "a(sst)")],
               handler: .now { provider, _ throws(SecretServiceError) in try PortalObject(provider).listAppKeys() }),
        Method(name: "Delete", rule: .unconfined, arguments: [Argument(name: "app_id", type: "s")], results: [Argument(name: "deleted", type: "b")],
               handler: .now { provider, call throws(SecretServiceError) in try PortalObject(provider).deleteAppKeys(of: call.argument(0)) }),
    ])
}

/// The desktop portal's Secret backend and secretd's AppKeys1 interface: each sandboxed app's
/// key handed to the portal frontend, listed and deleted.
struct PortalObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `RetrieveSecret(o handle, s app_id, h fd, a{sv} options)`: writes the app's key to `fd`
    /// and closes it, unlocking the login keyring through a prompt first when it is locked.
    func retrieveSecret(
        handle: String, appID: String, received: Int32, sender: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) {
        guard case .portalRequest = ObjectPaths.parse(handle), provider.portalRequests[handle] == nil else {
            return reply(.failure(.invalidArgs("the request handle \(handle) is not a new one under \(PortalNames.path)/request/")))
        }
        guard !appID.isEmpty else {
            return reply(.failure(.invalidArgs("the portal names no app: programs outside a sandbox have no app key")))
        }
        guard PortalNames.isAppID(appID) else {
            return reply(.failure(.invalidArgs("“\(appID.prefix(80))” is not a Flatpak app id")))
        }
        // The descriptor belongs to the call's message: keep a copy of our own.
        let descriptor = fcntl(received, F_DUPFD_CLOEXEC, 3)
        guard descriptor >= 0 else { return reply(.failure(.invalidArgs("the file descriptor cannot be used"))) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFIFO || (info.st_mode & S_IFMT) == S_IFSOCK else {
            Glibc.close(descriptor)
            return reply(.failure(.invalidArgs("the file descriptor must be a pipe or a socket")))
        }
        guard let collection = provider.resolveAlias("default") ?? (try? provider.keyring.collection(named: Provider.loginName)) else {
            Glibc.close(descriptor)
            Log.warning("no key for the app \(appID): there is no login collection to keep it in")
            return reply(.success(Self.portalReply(.failed)))
        }
        let requested = provider.clock()
        let finish = { [weak provider = provider] (response: PortalResponse) in
            Glibc.close(descriptor)
            if response != .success { provider?.portalRequests[handle] = nil }
            // Not sooner than answerDelay after the request: see there.
            let early = Self.answerDelay - (provider?.clock().timeIntervalSince(requested) ?? Self.answerDelay)
            guard early > 0 else { return reply(.success(Self.portalReply(response))) }
            MainLoop.after(seconds: early) { reply(.success(Self.portalReply(response))) }
        }
        guard provider.keyring.isLocked(collection) else { return finish(deliverAppKey(appID, in: collection, to: descriptor)) }

        let prompt = Prompt(
            owner: sender, action: .unlock(collections: [collection], groups: [], objects: []),
            requester: "The sandboxed app “\(appID)”"
        ) { [weak provider = provider] result in
            guard let provider else { return }
            provider.portalRequests[handle] = nil
            guard result != nil, !provider.keyring.isLocked(collection) else { return finish(.cancelled) }
            finish(PortalObject(provider).deliverAppKey(appID, in: collection, to: descriptor))
        }
        switch provider.addPrompt(prompt) {
        case .failure(let refusal):
            Glibc.close(descriptor)
            reply(.failure(refusal))
        case .success(let path):
            guard case .prompt(let id) = ObjectPaths.parse(path) else {
                Glibc.close(descriptor)
                return reply(.failure(.failed("cannot make the unlock prompt")))
            }
            provider.portalRequests[handle] = PortalRequest(owner: sender, promptID: id)
            provider.startConversation(promptID: id)
        }
    }

    /// `Request.Close` on a waiting request's handle: ends its prompt (the call is answered as
    /// cancelled).
    func closePortalRequest(_ handle: String) -> Result<DBusValue, SecretServiceError> {
        guard let request = provider.portalRequests[handle] else { return .failure(.noSuchObject("no request \(handle)")) }
        provider.portalRequests[handle] = nil
        provider.complete(id: request.promptID, result: nil)
        return .success(.tuple([]))
    }

    /// `RetrieveSecret`'s reply: the response and no results.
    private static func portalReply(_ response: PortalResponse) -> DBusValue {
        .tuple([.uint32(response.rawValue), .dictionary(key: "s", value: "v", [])])
    }

    /// Finds `appID`'s key in `collection` (unlocked), or makes it and commits it, then writes it
    /// to `descriptor`. Only a key in the app's own group counts: a client that planted an
    /// item with the app's id in another group does not choose the app's key.
    private func deliverAppKey(_ appID: String, in collection: Store.CollectionRecord, to descriptor: Int32) -> PortalResponse {
        guard let key = provider.keyring[collection.id] else { return .failed }
        do {
            let secret: SecureBytes
            if let existing = try appKeyItems(appID, in: collection).first {
                secret = try provider.keyring.readSecret(existing, in: collection, keys: key, route: "portal RetrieveSecret").secret
            } else {
                secret = Gcrypt.randomKey(count: PortalNames.keyLength)
                let contents = ItemContents(
                    label: "Key of the sandboxed app \(appID) (desktop portal)",
                    attributes: Self.appKeyAttributes(appID), secret: secret, contentType: "application/octet-stream")
                _ = try provider.keyring.createItem(in: collection, keys: key, contents: contents)
                // Durable before the app encrypts anything with it.
                if let failure = provider.commitBarrier.commit() { throw failure }
                Log.info("made the key of the sandboxed app \(appID)")
            }
            return Self.write(secret, to: descriptor) ? .success : .failed
        } catch {
            Log.error("cannot give the app \(appID) its key: \(error)")
            return .failed
        }
    }

    /// The keys of `appID` in `collection`, oldest first.
    private func appKeyItems(_ appID: String, in collection: Store.CollectionRecord) throws(StoreError) -> [Store.ItemRecord] {
        try provider.keyring.search(
            [PortalNames.appIDAttribute: appID, AccessGroupNames.attribute: PortalNames.group(of: appID)], in: collection
        ).sorted { $0.id < $1.id }
    }

    /// Writes all of `secret` to the pipe or socket (which must not block the main loop: 64
    /// bytes fit in any pipe, and a full one fails the request).
    private static func write(_ secret: SecureBytes, to descriptor: Int32) -> Bool {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        return secret.withBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    /// `Delete(app_id)`: the app's keys are gone; whether there were any.
    fileprivate func deleteAppKeys(of appID: String) throws(SecretServiceError) -> DBusValue {
        guard PortalNames.isAppID(appID) else { throw .invalidArgs("“\(appID.prefix(80))” is not a Flatpak app id") }
        let keys: [(Store.ItemRecord, Store.CollectionRecord, ItemContents)]?
        do throws(StoreError) {
            keys = try allAppKeys()
        } catch {
            throw provider.storeFailure(error)
        }
        guard let found = keys else { throw .isLocked("unlock the keyrings to delete an app key") }
        do throws(StoreError) {
            var deleted = false
            for (item, collection, contents) in found where contents.attributes[PortalNames.appIDAttribute] == appID {
                guard let key = provider.keyring[collection.id] else { continue }
                try provider.keyring.deleteItem(item, in: collection, keys: key)
                Log.info("deleted the key of the sandboxed app \(appID)")
                deleted = true
            }
            return .tuple([.boolean(deleted)])
        } catch {
            throw provider.storeFailure(error)
        }
    }

    /// Every app key in the keyrings; nil when a keyring that holds some is locked (its
    /// attributes are sealed).
    private func allAppKeys() throws(StoreError) -> [(Store.ItemRecord, Store.CollectionRecord, ItemContents)]? {
        var found: [(Store.ItemRecord, Store.CollectionRecord, ItemContents)] = []
        for collection in try provider.keyring.collections() where collection.name != Provider.sessionName {
            let items = try provider.keyring.search([PortalNames.schemaAttribute: PortalNames.schema], in: collection)
                .filter { AccessGroupNames.isAppGroup($0.accessGroup ?? "") }
            guard !items.isEmpty else { continue }
            guard let key = provider.keyring[collection.id] else { return nil }
            for item in items {
                let contents = try provider.keyring.readItem(item, in: collection, keys: key)
                found.append((item, collection, contents))
            }
        }
        return found
    }

    /// The least time between a `RetrieveSecret` and its answer. libsecret before 0.21.4 (Debian
    /// 12 has 0.20.5, as do older Flatpak runtimes) starts listening for the frontend's
    /// `Response` only once its own call to the frontend has returned, and waits forever for
    /// a `Response` that came before (libsecret issue 58): an answer within a few milliseconds,
    /// which a key already made gets, lost that race one time in three here.
    static let answerDelay = 0.2

    /// What an app key carries: the app id and schema gnome-keyring and oo7 use, and the group.
    static func appKeyAttributes(_ appID: String) -> [String: String] {
        [
            PortalNames.appIDAttribute: appID, PortalNames.schemaAttribute: PortalNames.schema,
            AccessGroupNames.attribute: PortalNames.group(of: appID),
        ]
    }

    // MARK: - The AppKeys interface

    /// `List`: every app key (app id, keyring, created); the keys themselves are never sent.
    fileprivate func listAppKeys() throws(SecretServiceError) -> DBusValue {
        let found: [(Store.ItemRecord, Store.CollectionRecord, ItemContents)]?
        do throws(StoreError) {
            found = try allAppKeys()
        } catch {
            throw provider.storeFailure(error)
        }
        guard let found else { throw .isLocked("unlock the keyrings to list the app keys") }
        let rows = found.map { item, collection, contents in
            DBusValue.tuple([
                .string(contents.attributes[PortalNames.appIDAttribute] ?? ""), .string(collection.name), .uint64(item.created),
            ])
        }
        return .tuple([.array(element: "(sst)", rows)])
    }

    /// The app whose desktop portal key an item with these attributes is, when it is one that
    /// names no access group (as gnome-keyring and oo7 store them).
    static func appKeyOwner(_ attributes: [String: String]) -> String? {
        guard attributes[PortalNames.schemaAttribute] == PortalNames.schema, attributes[AccessGroupNames.attribute] == nil,
            let appID = attributes[PortalNames.appIDAttribute], PortalNames.isAppID(appID)
        else { return nil }
        return appID
    }
}

/// The portal's response codes: success, cancelled by the person, failed.
enum PortalResponse: UInt32 {
    case success = 0, cancelled = 1, failed = 2
}

// What the bus server asks of secretd (BusHandler), answered from the interfaces' declarations
// (Introspection.all): each call admitted by its method's caller rule (CallRouter+Admission) and
// run by its handler, properties read and written, the objects under a path, and the commit
// that replies wait for.

import KeychainCore
import DBusValues
import SecretStore

/// Routes the bus server's calls, property accesses and introspection to the objects of one
/// ``Provider``, each through its interface's declaration.
final class CallRouter: BusHandler {
    /// What the objects share.
    let provider: Provider

    /// A router for `provider`'s objects.
    init(provider: Provider) { self.provider = provider }

    func identify(_ sender: String, then body: @escaping (SecretServiceError?) -> Void) -> Bool {
        provider.identify(sender, then: body)
    }

    func handle(_ call: MethodCall) -> Result<DBusValue, SecretServiceError> {
        provider.lastActivity = provider.clock()
        return waitingForWrites {
            acting(for: call) {
                admitted(call).flatMap { admitted, handler in
                    guard case .now(let answer) = handler else { return .failure(.failed("\(call.method) answers later")) }
                    return Result { () throws(SecretServiceError) in try answer(provider, admitted) }
                }
            }
        } ?? .failure(.failed("\(call.method) gave no answer"))
    }

    func handle(_ call: MethodCall, replyLater reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        provider.lastActivity = provider.clock()
        // What the handler answers before it returns is held until then: the call may yet run
        // again (``waitingForWrites(_:)``), and then any answer of this run is dropped.
        let answer = LaterAnswer(reply)
        let answered = waitingForWrites {
            acting(for: call) { () -> Result<DBusValue, SecretServiceError>? in
                switch admitted(call) {
                case .failure(let refusal):
                    return .failure(refusal)
                case .success((let admitted, .now(let handler))):
                    return Result { () throws(SecretServiceError) in try handler(provider, admitted) }
                case .success((let admitted, .later(let handler))):
                    do throws(SecretServiceError) {
                        try handler(provider, admitted, answer.reply)
                        return nil
                    } catch {
                        return .failure(error)
                    }
                }
            }
        }
        answer.returned(with: answered)
    }

    /// Runs `body` (a call's handling), and while a large item's write may hold the database's
    /// write lock (``ApartWriteGate/isWriting``) with the loop's writes failing at once rather
    /// than wait for it: a call whose write so failed is answered ``SecretServiceError/waitForWrite``,
    /// which the bus server does not send but runs the call again once that write has ended
    /// (``whenWritesEnd(_:)``). Until then it waits in its client's queue and the loop goes on
    /// with other clients' calls. (The write that failed was its first: nothing was written.)
    private func waitingForWrites(
        _ body: () -> Result<DBusValue, SecretServiceError>?
    ) -> Result<DBusValue, SecretServiceError>? {
        guard provider.keyring.apartWrites.isWriting else { return body() }
        let (answered, metBusy) = provider.keyring.store.failingWritesWhenBusy(body)
        return metBusy ? .failure(.waitForWrite) : answered
    }

    func whenWritesEnd(_ body: @escaping () -> Void) { provider.keyring.apartWrites.whenWriteEnds(body) }

    /// Runs `body` (a call's answer, nil when it answers later) with the caller of `call` as
    /// the keyring's accessor, the audit trail's "who", and tells the keyring when the answer
    /// refused the caller (``reportRefusal(_:of:)``).
    private func acting(
        for call: MethodCall, _ body: () -> Result<DBusValue, SecretServiceError>?
    ) -> Result<DBusValue, SecretServiceError>? {
        func run() -> Result<DBusValue, SecretServiceError>? {
            let answered = body()
            if case .failure(let error)? = answered { reportRefusal(error, of: call) }
            return answered
        }
        guard let caller = provider.callers[call.sender] else { return run() }
        return provider.keyring.acting(as: caller.accessor, run)
    }

    /// Publishes a refusal of `call` (``Keyring/refused(_:)``): access denied, a locked keyring
    /// or item, and an item that exists but that the caller may not see. Other errors (a bad
    /// argument, an object that is not there) are not refusals.
    private func reportRefusal(_ error: SecretServiceError, of call: MethodCall) {
        var item: Store.ItemRecord?
        var collection: Store.CollectionRecord?
        switch ObjectPaths.parse(call.path) {
        case .item(_, let id):
            item = try? provider.keyring.item(id: id)
            collection = item.flatMap { found in (try? provider.keyring.collections())?.first { $0.id == found.collectionID } }
        case .collection, .alias:
            collection = provider.collection(at: call.path)
        default:
            break
        }
        switch error {
        case .forbidden, .accessDenied, .isLocked: break
        case .noSuchObject where item != nil: break  // there, but not for this caller
        default: return
        }
        let name = call.interface.split(separator: ".").last.map(String.init) ?? call.interface
        provider.keyring.refused(AccessRefusal(route: "\(name).\(call.method)", reason: error.message, item: item, collection: collection))
    }

    /// `call` checked against its method's caller rule, with the object it reaches, and the
    /// method's handler (its declaration's, ``Introspection``).
    private func admitted(_ call: MethodCall) -> Result<(AdmittedCall, MethodHandler), SecretServiceError> {
        guard let method = Introspection.interfaces[call.interface]?.method(call.method) else {
            return .failure(.unknownMethod("no method \(call.method) in \(call.interface)"))
        }
        return admit(sender: call.sender, path: call.path, interface: call.interface, member: call.method, rule: method.rule).map { target in (AdmittedCall(call: call, target: target), method.handler) }
    }

    func property(_ name: String, interface: String, path: String, sender: String) -> Result<DBusValue, SecretServiceError> {
        propertyReader(interface: interface, path: path, sender: sender).flatMap { read in read(name) }
    }

    func properties(_ names: [String], interface: String, path: String, sender: String)
        -> Result<[(name: String, value: DBusValue)], SecretServiceError>
    {
        propertyReader(interface: interface, path: path, sender: sender).map { read in
            names.compactMap { name in (try? read(name).get()).map { (name, $0) } }
        }
    }

    /// What reads the properties of the object at `path` for `sender`, the object looked up
    /// once; `NoSuchObject` when there is none it may see.
    private func propertyReader(interface: String, path: String, sender: String)
        -> Result<(String) -> Result<DBusValue, SecretServiceError>, SecretServiceError>
    {
        if case .failure(let refusal) = provider.caller(sender) { return .failure(refusal) }
        let kind = ObjectPaths.parse(path).kind
        guard let declaration = Introspection.interfaces[interface], declaration.objects == kind else {
            return .failure(.noSuchObject("no property at \(path)"))
        }
        let target: PropertyRead.Target
        switch kind {
        case .service: target = .service
        case .portal: target = .portal
        case .collection:
            guard let collection = provider.collection(at: path) else { return .failure(.noSuchObject("no collection \(path)")) }
            provider.callers[sender]?.watchesItems = true
            target = .collection(collection)
        case .item:
            guard let (item, collection, access) = provider.visibleItem(at: path, for: sender) else {
                return .failure(.noSuchObject("no item \(path)"))
            }
            provider.callers[sender]?.watchesItems = true
            target = .item(item, collection, access)
        case .session, .prompt, .portalRequest, nil:
            return .failure(.noSuchObject("no property at \(path)"))
        }
        let read = PropertyRead(target: target, sender: sender)
        return .success { [provider] name in
            guard let property = declaration.property(name) else { return .failure(.unknownProperty("no property \(name) at \(path)")) }
            return Result { () throws(SecretServiceError) in try property.read(provider, read) }
        }
    }

    func setProperty(_ name: String, interface: String, path: String, value: DBusValue, sender: String) -> SecretServiceError? {
        provider.lastActivity = provider.clock()
        guard let declaration = Introspection.interfaces[interface], let setter = declaration.property(name)?.setter else {
            return .propertyReadOnly("\(interface).\(name) cannot be written")
        }
        guard declaration.objects == ObjectPaths.parse(path).kind else { return .noSuchObject("no writable property \(name) at \(path)") }
        switch admit(sender: sender, path: path, interface: interface, member: "Set(\(name))", rule: setter.rule) {
        case .failure(let refusal):
            return refusal
        case .success(let target):
            // Run again once a write in progress has ended, as a call's write is.
            let written = waitingForWrites {
                provider.keyring.acting(as: provider.callers[sender]?.accessor ?? .secretd) {
                    Result { () throws(SecretServiceError) in
                        try setter.write(provider, PropertyWrite(target: target, value: value, sender: sender))
                        return DBusValue.tuple([])
                    }
                }
            }
            if case .failure(let error)? = written { return error }
            return nil
        }
    }

    func children(of path: String, sender: String) -> [String] {
        switch path {
        case ObjectPaths.service: return ["aliases", "collection", "prompt", "session"]
        case ObjectPaths.aliasPrefix:
            return Array(((try? provider.keyring.aliases()) ?? [:]).keys) + [Provider.sessionName]
        case ObjectPaths.sessionPrefix: return provider.sessions.ids.map { "s\($0)" }
        case ObjectPaths.promptPrefix: return provider.prompts.ids.map { "p\($0)" }
        case ObjectPaths.collectionPrefix: return ((try? provider.keyring.collections()) ?? []).map(\.name)
        default:
            guard let collection = provider.collection(at: path) else { return [] }
            return provider.visible((try? provider.keyring.search([:], in: collection)) ?? [], for: sender).map { String($0.0.id) }
        }
    }

    var commitBarrier: CommitBarrier { provider.commitBarrier }

    func objectExists(at path: String, sender: String) -> Bool {
        switch ObjectPaths.parse(path) {
        case .service: return true
        case .collection, .alias: return provider.collection(at: path) != nil
        case .item: return provider.visibleItem(at: path, for: sender) != nil
        case .session(let id): return provider.sessions.contains(id, of: sender)
        case .prompt(let id): return provider.prompts[id]?.owner == sender
        case .portal: return true
        case .portalRequest(let handle): return provider.portalRequests[handle]?.owner == sender
        case .unknown: return false
        }
    }

    func interfaces(at path: String) -> [String] {
        ObjectPaths.parse(path).kind.map(Introspection.interfaces(of:)) ?? []
    }
}

/// The reply of a call whose handler answers later (``CallRouter/handle(_:replyLater:)``): an
/// answer given before the handler returns is held until it does, and sent then unless the
/// call is to run again (``SecretServiceError/waitForWrite``), in which case every answer of
/// this run is dropped.
private final class LaterAnswer {
    private let send: (Result<DBusValue, SecretServiceError>) -> Void
    private var handlerReturned = false
    private var held: Result<DBusValue, SecretServiceError>?
    private var dropped = false

    init(_ send: @escaping (Result<DBusValue, SecretServiceError>) -> Void) { self.send = send }

    /// What the handler is given to answer with.
    var reply: (Result<DBusValue, SecretServiceError>) -> Void {
        { [self] result in
            guard !dropped else { return }
            if handlerReturned { send(result) } else { held = result }
        }
    }

    /// The handler returned, with `answered` (nil: it answers later, or did through ``reply``).
    func returned(with answered: Result<DBusValue, SecretServiceError>?) {
        handlerReturned = true
        if case .failure(.waitForWrite)? = answered {
            dropped = true
            send(.failure(.waitForWrite))
        } else if let answer = answered ?? held {
            send(answer)
        }
        held = nil
    }
}

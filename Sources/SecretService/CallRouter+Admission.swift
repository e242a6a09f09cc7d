// Who may call what: every call and every property write is checked here, against the rule its
// declaration carries (CallerRule, Introspection), before any handler runs.

import KeychainCore
import SecretStore

/// The object an admitted call reaches, looked up once for the check and the handler.
enum AdmittedTarget {
    /// `/org/freedesktop/secrets`.
    case service
    /// `/org/freedesktop/portal/desktop`, the portal backend.
    case portal
    /// A collection, by its own path or an alias.
    case collection(Store.CollectionRecord)
    /// An item the caller may use (it is in one of the caller's access groups).
    case item(Store.ItemRecord, Store.CollectionRecord)
    /// One of the caller's sessions.
    case session(Int)
    /// One of the caller's prompts.
    case prompt(Int)
    /// One of the caller's waiting portal requests, by handle.
    case portalRequest(String)
}

extension CallRouter {
    /// Checks `call` against the rule of the method it names (``CallerRule``); the object it
    /// reaches when admitted. A method secretd does not declare is `UnknownMethod`.
    func admit(_ call: MethodCall) -> Result<AdmittedTarget, SecretServiceError> {
        guard let rule = Introspection.interfaces[call.interface]?.method(call.method)?.rule else {
            return .failure(.unknownMethod("no method \(call.method) in \(call.interface)"))
        }
        return admit(sender: call.sender, path: call.path, interface: call.interface, member: call.method, rule: rule)
    }

    /// Checks that `sender` may call `member` of `interface` at `path` under `rule`: the caller
    /// is identified (another user, or a process that cannot be named, is refused), the object
    /// exists for it (an item it may not see does not), and the rule holds. Refusals of the
    /// caller's kind are logged with its identity; an object that is not there is not.
    func admit(
        sender: String, path: String, interface: String, member: String, rule: CallerRule
    ) -> Result<AdmittedTarget, SecretServiceError> {
        let caller: Caller
        switch provider.caller(sender) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let identified): caller = identified
        }
        let target: AdmittedTarget
        switch ObjectPaths.parse(path) {
        case .service: target = .service
        case .portal: target = .portal
        case .collection, .alias:
            guard let collection = provider.collection(at: path) else { return .failure(.noSuchObject("no collection \(path)")) }
            target = .collection(collection)
        case .item:
            guard let (item, collection, access) = provider.visibleItem(at: path, for: sender) else {
                return .failure(.noSuchObject("no item \(path)"))
            }
            if rule == .itemGroup, access != .full {
                let group = item.accessGroup ?? AccessGroupNames.defaultGroup
                return .failure(.isLocked(
                    provider.isAllowedInto(caller, group)
                        ? provider.consentMissing(caller, group) : "the item is in an access group you must be allowed into"))
            }
            target = .item(item, collection)
        case .session(let id):
            guard provider.sessions.contains(id, of: sender) else { return .failure(.noSession("the session \(path) does not exist")) }
            target = .session(id)
        case .prompt(let id):
            guard provider.prompts[id]?.owner == sender else { return .failure(.noSuchObject("no prompt \(path)")) }
            target = .prompt(id)
        case .portalRequest(let handle):
            guard provider.portalRequests[handle]?.owner == sender else { return .failure(.noSuchObject("no request \(path)")) }
            target = .portalRequest(handle)
        case .unknown:
            return .failure(.noSuchObject("no object \(path)"))
        }
        switch rule {
        case .anyClient:
            return .success(target)
        case .itemGroup:
            guard case .item = target else { return .failure(.noSuchObject("no item \(path)")) }
            return .success(target)
        case .objectOwner:
            switch target {
            case .session, .prompt, .portalRequest: return .success(target)
            default: return .failure(.noSuchObject("no object \(path) of yours"))
            }
        case .unconfined:
            guard CallerRule.isUnconfinedHost(caller.identity, confined: provider.membership(caller).confined) else {
                return .failure(refuse(caller, interface: interface, member: member, rule: rule))
            }
            return .success(target)
        case .portalFrontend:
            guard provider.options.configuration.portalFrontends.contains(caller.identity) else {
                return .failure(refuse(caller, interface: interface, member: member, rule: rule))
            }
            return .success(target)
        }
    }

    /// Logs a refusal of `caller`'s kind (its first ``Caller/loggedRefusals``) and makes its
    /// error (`AccessDenied`).
    private func refuse(_ caller: Caller, interface: String, member: String, rule: CallerRule) -> SecretServiceError {
        let name = interface.split(separator: ".").last.map(String.init) ?? interface
        caller.refusals += 1
        if caller.refusals <= Caller.loggedRefusals {
            Log.warning("refused \(name).\(member) to \(caller.identity) (pid \(caller.pid)): only \(rule.rawValue) may call it"
                        + (caller.refusals == Caller.loggedRefusals ? "; its further refusals are not logged" : ""))
        }
        return .forbidden("\(caller.identity) may not call \(interface).\(member): only \(rule.rawValue) may")
    }
}

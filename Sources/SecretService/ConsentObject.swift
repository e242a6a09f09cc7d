// io.github.secretd.Consent1
//
// Consent for new readers (secretctl consent): the readers the person always allowed, allowed
// ahead (with the login password, or through secretd's prompt) and forgotten. Who must ask is
// ReaderConsents'.

import KeychainCore
import FoundationEssentials
import SecretStore
import DBusValues

extension Introspection {
    /// secretd's own: remembered consents, for unconfined clients outside a sandbox (its rule):
    /// a program must not allow itself, nor learn who else reads.
    static let consentInterface = BusInterface(name: consent, objects: .service, methods: [
        Method(name: "List", rule: .unconfined, results: [
            Argument(name: "consents", type: "a(sssx)"), Argument(name: "default_mode", type: "s"),
            Argument(name: "asking_groups", type: "as"),
        ], handler: .now { provider, _ throws(SecretServiceError) in ConsentObject(provider).list() }),
        Method(name: "Allow", rule: .unconfined, arguments: [
            Argument(name: "identity", type: "s"), Argument(name: "group", type: "s"),
            Argument(name: "login_password", type: secret),
        ], results: [Argument(name: "prompt", type: "o")],
               handler: .later { provider, call, reply throws(SecretServiceError) in try ConsentObject(provider).allow(call, reply: reply) }),
        Method(name: "Revoke", rule: .unconfined, arguments: [Argument(name: "identity", type: "s"), Argument(name: "group", type: "s")],
               results: [Argument(name: "removed", type: "b")],
               handler: .now { provider, call throws(SecretServiceError) in
                   try ConsentObject(provider).revoke(call.argument(0), group: call.argument(1))
               }),
    ])
}

/// secretd's Consent1 interface: the remembered consents of readers, listed, given and taken back.
struct ConsentObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `List`: each consent (identity, group, the executable's SHA-256 in hex or "" for any
    /// executable, when in seconds since 1970); secretd.conf's `consent`; the groups that ask.
    fileprivate func list() -> DBusValue {
        let consents = provider.consents.all.map { consent in
            DBusValue.tuple([
                .string(consent.identity), .string(consent.group),
                .string(consent.executableDigest?.hexString ?? ""),
                .int64(consent.granted),
            ])
        }
        var asking = provider.policy.groups.filter { provider.consents.mode(of: $0.name, in: provider.policy) == .newReaders }.map(\.name)
        if provider.consents.mode(of: AccessGroupNames.defaultGroup, in: provider.policy) == .newReaders {
            asking.insert(AccessGroupNames.defaultGroup, at: 0)
        }
        return .tuple([
            .array(element: "(sssx)", consents), .string(provider.options.configuration.readerConsent.rawValue),
            .strings(asking),
        ])
    }

    /// `Allow`: with the login password, answered once its check, off the main loop, is done;
    /// without it (session `/`), through a prompt the person answers.
    fileprivate func allow(_ call: AdmittedCall, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) throws(SecretServiceError) {
        let identity = try call.argument(0, as: String.self)
        let group = try call.argument(1, as: String.self)
        let password = try call.argument(2, as: DBusValue.self)
        try Self.check(identity: identity, group: group)
        let change = PolicyChange(add: true, group: group, identity: identity, kind: .reader)
        if password.tuple?.first?.objectPath == ObjectPaths.none {
            guard provider.options.configuration.pinentry != nil else {
                throw .forbidden("secretd has no pinentry to ask for your consent; give the login password instead (secretctl consent allow --password-stdin)")
            }
            return reply(provider.addPrompt(Prompt(owner: call.sender, action: .changePolicy(change))).map { .tuple([.objectPath($0)]) })
        }
        let (loginPassword, _) = try provider.decodeSecret(password, from: call.sender).get()
        provider.verifyLoginPassword(loginPassword) { [weak provider = provider] verified in
            guard let provider else { return }
            reply(verified.flatMap { provider.apply(change) }.map { .tuple([.objectPath(ObjectPaths.none)]) })
        }
    }

    /// `Revoke`: forgets a consent (no password: it only takes access away); false when there
    /// was none.
    fileprivate func revoke(_ identity: String, group: String) throws(SecretServiceError) -> DBusValue {
        try Self.check(identity: identity, group: group)
        return .tuple([.boolean(try provider.consents.revoke(identity, reading: group).get())])
    }

    private static func check(identity: String, group: String) throws(SecretServiceError) {
        guard CallerIdentity(parsing: identity) != nil else {
            throw .invalidArgs("“\(identity)” is not an identity (flatpak:ID, snap:NAME, unit:NAME or exe:/PATH)")
        }
        guard group == AccessGroupNames.defaultGroup || AccessGroupNames.isGroupName(group) else {
            throw .invalidArgs("“\(group)” is not a group name")
        }
    }
}

import DBusValues
import Foundation
import KeychainCore
@testable import SecretCrypto
@testable import SecretService
import SecretStore
import Testing

/// Every method of every interface secretd declares, called by each kind of client, in this
/// process: the expected outcome comes from the method's declared ``CallerRule``, so a method
/// added with a rule is checked by the same matrix (and one without a rule does not compile).
/// A refused call must change nothing.
@Suite struct CallerRuleTests {
    typealias Fixture = InProcessDaemonTests.Fixture

    /// The kinds of client the matrix calls as.
    enum Kind: String, CaseIterable, CustomStringConvertible {
        /// The person's own tool, unconfined, and a member of the shared group; it owns the
        /// session and prompt called.
        case unconfined
        /// An app confined by an `[app]` entry to the shared group.
        case confined
        /// A Flatpak app that talks to the Secret Service directly (`--talk-name`).
        case flatpak
        /// Another unconfined tool, not a member of the shared group.
        case nonMember
        /// The desktop portal's frontend (`portal-frontends`); it owns the portal request.
        case portalFrontend

        var description: String { rawValue }

        var sender: String {
            switch self {
            case .unconfined: ":1.100"
            case .confined: ":1.101"
            case .flatpak: ":1.102"
            case .nonMember: ":1.103"
            case .portalFrontend: ":1.104"
            }
        }

        var identity: CallerIdentity {
            switch self {
            case .unconfined: CallerIdentity(kind: .exe, name: "/usr/bin/tool-a")
            case .confined: CallerIdentity(kind: .exe, name: "/opt/app/bin/app")
            case .flatpak: CallerIdentity(kind: .flatpak, name: "org.example.App")
            case .nonMember: CallerIdentity(kind: .exe, name: "/usr/bin/tool-b")
            case .portalFrontend: CallerIdentity(kind: .exe, name: "/usr/libexec/xdg-desktop-portal")
            }
        }
    }

    static let sharedGroup = "com.example.shared"
    static let policy = """
        [group "\(sharedGroup)"]
        member = exe:/usr/bin/tool-a
        [app "exe:/opt/app/bin/app"]
        groups = \(sharedGroup)
        """

    /// A daemon with the five clients identified, a shared item, and one session, prompt and
    /// portal request each owned by their client.
    struct World {
        let fixture: Fixture
        let item: String
        let session: String
        let prompt: String
        let portalRequest: String

        init() throws {
            var configuration = Configuration()
            configuration.portalFrontends = [Kind.portalFrontend.identity]
            fixture = try Fixture(configuration: configuration)
            let daemon = fixture.daemon
            daemon.policy = try AccessPolicy.parse(CallerRuleTests.policy, file: "test")
            for kind in Kind.allCases {
                daemon.callers.add(Caller(identity: kind.identity, pid: getpid()), as: kind.sender)
            }
            session = try Self.value(World.call(daemon, .unconfined, SecretServiceNames.Path.service, Introspection.service,
                                                "OpenSession", [.string("plain"), .variant(.string(""))]), at: 1)
            let created = try World.call(daemon, .unconfined, Fixture.login, Introspection.collection, "CreateItem", [
                .properties([
                    SecretServiceNames.Property.itemLabel: .string("Shared"),
                    SecretServiceNames.Property.itemAttributes: .stringMap([
                        "service": "shared", AccessGroupNames.attribute: CallerRuleTests.sharedGroup,
                    ]),
                ]),
                Fixture.secret(session, "shared-secret"), .boolean(false),
            ])
            item = try Self.value(created, at: 0)
            prompt = try Self.value(World.call(daemon, .unconfined, SecretServiceNames.Path.service, Introspection.service,
                                               "CreateCollection", [.properties([:]), .string("")]), at: 1)
            portalRequest = PortalNames.path + "/request/1_42/t"
            daemon.portalRequests[portalRequest] = PortalRequest(owner: Kind.portalFrontend.sender, promptID: 0)
        }

        static func call(
            _ daemon: Provider, _ kind: Kind, _ path: String, _ interface: String, _ method: String, _ arguments: [DBusValue]
        ) -> Result<DBusValue, SecretServiceError> {
            let result = Fixture.call(daemon, MethodCall(sender: kind.sender, path: path, interface: interface, method: method, arguments: arguments))
            _ = daemon.commitPending()
            return result
        }

        static func value(_ result: Result<DBusValue, SecretServiceError>, at index: Int) throws -> String {
            try #require(try result.get().tuple?[index].objectPath)
        }

        /// Where a method of `interface` is called.
        func path(of interface: String) -> String {
            switch interface {
            case Introspection.collection: Fixture.login
            case Introspection.item: item
            case Introspection.session: session
            case Introspection.prompt: prompt
            case Introspection.portalSecret: PortalNames.path
            case Introspection.portalRequest: portalRequest
            default: SecretServiceNames.Path.service
            }
        }

        /// Everything a refused call must leave as it was.
        var state: String {
            let store = fixture.daemon.keyring
            let collections = ((try? store.collections()) ?? []).map { "\($0.name)=\($0.label)" }
            let items = ((try? store.search([:], in: nil)) ?? []).map { "\($0.id):\($0.accessGroup ?? "-")" }
            let locked = ((try? store.collections()) ?? []).map { fixture.daemon.keyring.isLocked($0) }
            return "\(collections) \((try? store.aliases()) ?? [:]) \(items) \(locked) \(fixture.daemon.policy)"
                + " sessions \(fixture.daemon.sessions.ids) prompts \(fixture.daemon.prompts.ids)"
        }
    }

    /// The error a client of `kind` gets from a method under `rule` (nil: admitted). The object
    /// rules answer as if the object were not there; the caller rules refuse with AccessDenied.
    static func expectedRefusal(_ rule: CallerRule, _ kind: Kind, interface: String) -> String? {
        let denied = "org.freedesktop.DBus.Error.AccessDenied"
        switch rule {
        case .anyClient: return nil
        case .unconfined: return kind == .confined || kind == .flatpak ? denied : nil
        case .itemGroup: return kind == .unconfined || kind == .confined ? nil : SecretServiceNames.ErrorName.noSuchObject
        case .objectOwner:
            let owner: Kind = interface == Introspection.portalRequest ? .portalFrontend : .unconfined
            if kind == owner { return nil }
            return interface == Introspection.session ? SecretServiceNames.ErrorName.noSession : SecretServiceNames.ErrorName.noSuchObject
        case .portalFrontend: return kind == .portalFrontend ? nil : denied
        }
    }

    /// Placeholder arguments of a signature's types (empty strings and lists, `/` paths).
    static func placeholders(_ signature: String) -> [DBusValue] {
        var rest = Substring(signature)
        var values: [DBusValue] = []
        while !rest.isEmpty { values.append(placeholder(&rest)) }
        return values
    }

    private static func placeholder(_ rest: inout Substring) -> DBusValue {
        let code = rest.removeFirst()
        switch code {
        case "s": return .string("")
        case "o": return .objectPath("/")
        case "b": return .boolean(false)
        case "u": return .uint32(0)
        case "t": return .uint64(0)
        case "x": return .int64(0)
        case "h": return .fileDescriptorIndex(0)
        case "v": return .variant(.string(""))
        case "y": return .byte(0)
        case "a":
            if rest.first == "{" {
                rest.removeFirst()
                let key = String(rest.removeFirst())
                let start = rest.startIndex
                _ = placeholder(&rest)
                let value = String(rest.base[start..<rest.startIndex])
                rest.removeFirst()  // "}"
                return .dictionary(key: key, value: value, [])
            }
            if rest.first == "y" {
                rest.removeFirst()
                return .bytes(DBusBytes([]))
            }
            let start = rest.startIndex
            _ = placeholder(&rest)
            return .array(element: String(rest.base[start..<rest.startIndex]), [])
        case "(":
            var fields: [DBusValue] = []
            while rest.first != ")" { fields.append(placeholder(&rest)) }
            rest.removeFirst()
            return .tuple(fields)
        default:
            Issue.record("no placeholder for type \(code)")
            return .string("")
        }
    }

    /// Every declared method, as (interface, method).
    static var methods: [(String, BusInterface.Method)] {
        Introspection.interfaces.values.sorted { $0.name < $1.name }.flatMap { interface in
            interface.methods.map { (interface.name, $0) }
        }
    }

    /// The rule of every method, as decided (secretd(1), ACCESS CONTROL): a method added, or a
    /// rule changed, must be written here too, so that the change is a decision and not a default.
    static let decided: [String: CallerRule] = [
        "org.freedesktop.Secret.Service.OpenSession": .anyClient,
        "org.freedesktop.Secret.Service.CreateCollection": .anyClient,  // through a prompt the person answers
        "org.freedesktop.Secret.Service.SearchItems": .anyClient,
        "org.freedesktop.Secret.Service.Unlock": .anyClient,  // through a prompt
        "org.freedesktop.Secret.Service.Lock": .unconfined,
        "org.freedesktop.Secret.Service.GetSecrets": .anyClient,
        "org.freedesktop.Secret.Service.ReadAlias": .anyClient,
        "org.freedesktop.Secret.Service.SetAlias": .unconfined,
        "org.freedesktop.Secret.Collection.Delete": .unconfined,
        "org.freedesktop.Secret.Collection.SearchItems": .anyClient,
        "org.freedesktop.Secret.Collection.CreateItem": .anyClient,  // into its own groups only
        "org.freedesktop.Secret.Item.Delete": .itemGroup,
        "org.freedesktop.Secret.Item.GetSecret": .itemGroup,
        "org.freedesktop.Secret.Item.SetSecret": .itemGroup,
        "org.freedesktop.Secret.Session.Close": .objectOwner,
        "org.freedesktop.Secret.Prompt.Prompt": .objectOwner,
        "org.freedesktop.Secret.Prompt.Dismiss": .objectOwner,
        "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.ChangeWithMasterPassword": .unconfined,
        "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.ChangeWithPrompt": .unconfined,
        "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.CreateWithMasterPassword": .unconfined,
        "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.UnlockWithMasterPassword": .anyClient,  // knows the password
        "io.github.secretd.AccessGroups1.WhoAmI": .anyClient,
        "io.github.secretd.AccessGroups1.GetPolicy": .unconfined,
        "io.github.secretd.AccessGroups1.AddMember": .unconfined,
        "io.github.secretd.AccessGroups1.RemoveMember": .unconfined,
        "io.github.secretd.Import1.ImportKeyring": .unconfined,
        "io.github.secretd.Import1.ImportItems": .unconfined,
        "io.github.secretd.Import1.ImportPackedItems": .unconfined,
        "io.github.secretd.Import1.ReadItems": .unconfined,
        "io.github.secretd.Import1.ReadPackedItems": .unconfined,
        "io.github.secretd.AppKeys1.List": .unconfined,
        "io.github.secretd.AppKeys1.Delete": .unconfined,
        "io.github.secretd.Locking1.LockAll": .unconfined,
        "io.github.secretd.QuickUnlock1.SetPin": .unconfined,
        "io.github.secretd.QuickUnlock1.ClearPin": .unconfined,
        "io.github.secretd.QuickUnlock1.UnlockWithPin": .unconfined,
        "io.github.secretd.QuickUnlock1.GetPinStatus": .unconfined,
        "io.github.secretd.TPM1.Enroll": .unconfined,
        "io.github.secretd.TPM1.Remove": .unconfined,
        "io.github.secretd.TPM1.GetStatus": .unconfined,
        "io.github.secretd.Maintenance1.Check": .unconfined,
        "io.github.secretd.Maintenance1.Backup": .unconfined,
        "io.github.secretd.Maintenance1.VerifyBackup": .unconfined,
        "io.github.secretd.Maintenance1.Restore": .unconfined,
        "io.github.secretd.Maintenance1.AutomaticBackups": .unconfined,
        "io.github.secretd.Audit1.Read": .unconfined,
        "io.github.secretd.Consent1.List": .unconfined,
        "io.github.secretd.Consent1.Allow": .unconfined,
        "io.github.secretd.Consent1.Revoke": .unconfined,
        "io.github.secretd.Runs1.Begin": .unconfined,
        "io.github.secretd.Runs1.End": .unconfined,
        "io.github.secretd.Sync1.Init": .unconfined,
        "io.github.secretd.Sync1.Join": .unconfined,
        "io.github.secretd.Sync1.Approve": .unconfined,
        "io.github.secretd.Sync1.Remove": .unconfined,
        "io.github.secretd.Sync1.Leave": .unconfined,
        "io.github.secretd.Sync1.SyncNow": .unconfined,
        "io.github.secretd.Sync1.GetStatus": .unconfined,
        "io.github.secretd.Sync1.GetHistory": .unconfined,
        "io.github.secretd.Sync1.RestoreVersion": .unconfined,
        "org.freedesktop.impl.portal.Secret.RetrieveSecret": .portalFrontend,
        "org.freedesktop.impl.portal.Request.Close": .objectOwner,
        "Set org.freedesktop.Secret.Collection.Label": .unconfined,
        "Set org.freedesktop.Secret.Item.Label": .itemGroup,
        "Set org.freedesktop.Secret.Item.Attributes": .itemGroup,
    ]

    @Test("every method and writable property has the rule decided for it (a new one must be added to the table)")
    func rulesAreAsDecided() {
        var declared: [String: CallerRule] = [:]
        for interface in Introspection.interfaces.values {
            for method in interface.methods { declared["\(interface.name).\(method.name)"] = method.rule }
            for property in interface.properties {
                if let rule = property.writableBy { declared["Set \(interface.name).\(property.name)"] = rule }
            }
        }
        for (name, rule) in declared.sorted(by: { $0.key < $1.key }) {
            #expect(Self.decided[name] == rule, "\(name) is declared \(rule), decided \(Self.decided[name].map { "\($0)" } ?? "nothing")")
        }
        #expect(Set(Self.decided.keys) == Set(declared.keys))
    }

    @Test("secretd(1)'s ACCESS CONTROL lists every method and writable property under the rule it has")
    func manualListsEveryRule() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let manual = try String(contentsOf: root.appendingPathComponent("man/secretd.1"), encoding: .utf8)
        let section = try #require(manual.components(separatedBy: ".Sh ACCESS CONTROL\n").dropFirst().first?
            .components(separatedBy: "\n.Sh ").first)
        let headings: [String: CallerRule] = [
            "Any client": .anyClient, "Members of the item's access group": .itemGroup,
            "The client that opened the object": .objectOwner, "The desktop portal": .portalFrontend,
            "Unconfined clients outside a sandbox": .unconfined,
        ]
        var paragraphs: [CallerRule: String] = [:]
        for entry in section.components(separatedBy: "\n.It ").dropFirst() {
            let heading = String(entry.prefix { $0 != "\n" })
            let rule = try #require(headings[heading], "an entry \(heading) that names no rule")
            paragraphs[rule] = entry
        }
        #expect(Set(paragraphs.keys) == Set(CallerRule.allCases))
        for (name, rule) in Self.decided {
            let writing = name.hasPrefix("Set ")
            let qualified = writing ? String(name.dropFirst(4)) : name
            let parts = qualified.split(separator: ".")
            let interface = parts.dropLast().joined(separator: ".")
            let method = String(parts.last!)
            let shown = interface == SecretServiceNames.Interface.gnomeExtension
                ? "gnome-keyring's\n.Li \(method)" : ".Li \(parts[parts.count - 2]).\(method)"
            let line = writing ? "writing\n" + shown : shown
            #expect(paragraphs[rule]?.contains(line + " ") == true || paragraphs[rule]?.contains(line + "\n") == true
                    || (interface == SecretServiceNames.Interface.gnomeExtension && paragraphs[rule]?.contains(".Li \(method) ") == true),
                    "secretd(1) does not list \(name) under \(rule.rawValue)")
        }
    }

    @Test("every method of every interface: admitted or refused by its declared rule, for each kind of client; refusals change nothing")
    func matrix() throws {
        var checked = 0
        for (interface, method) in Self.methods {
            for kind in Kind.allCases {
                let world = try World()
                defer { world.fixture.remove() }
                let path = world.path(of: interface)
                let call = MethodCall(
                    sender: kind.sender, path: path, interface: interface, method: method.name,
                    arguments: Self.placeholders(method.inSignature))
                let expected = Self.expectedRefusal(method.rule, kind, interface: interface)
                let admitted = world.fixture.daemon.router.admit(call)
                if let expected {
                    let before = world.state
                    var outcome: Result<DBusValue, SecretServiceError>?
                    if method.repliesLater {
                        world.fixture.daemon.router.handle(call) { outcome = $0 }
                    } else {
                        outcome = world.fixture.daemon.router.handle(call)
                    }
                    _ = world.fixture.daemon.commitPending()
                    #expect(outcome?.failure?.dbusName == expected, "\(interface).\(method.name) as \(kind): \(String(describing: outcome))")
                    #expect(admitted.failure?.dbusName == expected, "\(interface).\(method.name) as \(kind) admitted")
                    #expect(world.state == before, "\(interface).\(method.name) as \(kind) changed something")
                } else {
                    #expect(admitted.failure == nil, "\(interface).\(method.name) as \(kind): \(String(describing: admitted.failure))")
                }
                checked += 1
            }
        }
        #expect(checked == Self.methods.count * Kind.allCases.count)
        #expect(Self.methods.count >= 47)
    }

    @Test("every writable property: Set admitted or refused by its rule, for each kind of client; refusals change nothing")
    func propertyMatrix() throws {
        let writable = Introspection.interfaces.values.flatMap { interface in
            interface.properties.compactMap { property in property.writableBy.map { (interface.name, property, $0) } }
        }
        #expect(writable.count == 3)
        for (interface, property, rule) in writable {
            for kind in Kind.allCases {
                let world = try World()
                defer { world.fixture.remove() }
                let before = world.state
                let value: DBusValue = property.type == "s" ? .string("x") : .stringMap(["service": "x"])
                let refusal = world.fixture.daemon.router.setProperty(
                    property.name, interface: interface, path: world.path(of: interface), value: value, sender: kind.sender)
                _ = world.fixture.daemon.commitPending()
                if let expected = Self.expectedRefusal(rule, kind, interface: interface) {
                    #expect(refusal?.dbusName == expected, "Set \(interface).\(property.name) as \(kind): \(String(describing: refusal))")
                    #expect(world.state == before, "Set \(interface).\(property.name) as \(kind) changed something")
                } else if let refusal {
                    // Admitted; the handler may still refuse the value (moving an item out of its group).
                    #expect(refusal.dbusName != "org.freedesktop.DBus.Error.AccessDenied" || property.name == "Attributes",
                            "Set \(interface).\(property.name) as \(kind): \(refusal)")
                }
            }
        }
    }

    @Test("the attacks of issue 44, in this process: a confined or sandboxed client cannot delete, create, relabel, re-alias, re-password or lock keyrings")
    func managementRefused() throws {
        let world = try World()
        defer { world.fixture.remove() }
        let daemon = world.fixture.daemon
        let before = world.state
        for kind in [Kind.confined, .flatpak] {
            let secret = Fixture.secret("/", "chosen")
            let attempts: [(String, String, String, [DBusValue])] = [
                (Fixture.login, Introspection.collection, "Delete", []),
                (SecretServiceNames.Path.service, Introspection.gnomeExtension, "CreateWithMasterPassword",
                 [.properties([SecretServiceNames.Property.collectionLabel: .variant(.string("Mine"))]), secret]),
                (SecretServiceNames.Path.service, Introspection.service, "SetAlias", [.string("default"), .objectPath("/")]),
                (SecretServiceNames.Path.service, Introspection.gnomeExtension, "ChangeWithMasterPassword",
                 [.objectPath(Fixture.login), secret, secret]),
                (SecretServiceNames.Path.service, Introspection.service, "Lock", [.objectPaths([Fixture.login])]),
                (SecretServiceNames.Path.service, Introspection.locking, "LockAll", []),
                (SecretServiceNames.Path.service, Introspection.accessGroups, "GetPolicy", []),
            ]
            for (path, interface, method, arguments) in attempts {
                let result = World.call(daemon, kind, path, interface, method, arguments)
                #expect(result.failure?.dbusName == "org.freedesktop.DBus.Error.AccessDenied", "\(method) as \(kind)")
            }
            #expect(daemon.router.setProperty("Label", interface: Introspection.collection, path: Fixture.login,
                                       value: .string("Pwned"), sender: kind.sender)?.dbusName
                    == "org.freedesktop.DBus.Error.AccessDenied")
        }
        #expect(world.state == before)
        // What the same clients may still do: read their own group's item, and the alias.
        let read = World.call(daemon, .confined, SecretServiceNames.Path.service, Introspection.service, "ReadAlias", [.string("default")])
        #expect(read.success?.tuple?.first?.objectPath == Fixture.login)
    }
}

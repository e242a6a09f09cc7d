import DBusValues
import KeychainCore
import Foundation
import KeychainTestSupport
@testable import SecretService
import SecretStore
import Testing

/// Who hears about an item: signals about items go, unicast, only to the clients that have
/// called secretd and may see the item. Proven with real processes: a Flatpak app run the way
/// flatpak runs one (bubblewrap with its own `/.flatpak-info`, talking to the bus through
/// xdg-dbus-proxy with flatpak's filters, in the same sandbox), unconfined Python clients that
/// listen as secretstorage's users do (`scripts/dbus-clients/signal-listener.py`), and copies
/// of Python under other paths as separate callers.
@Suite struct SignalAudienceTests: SecretServiceCalls {
    static let appID = "org.example.App"

    // MARK: - A Flatpak app

    @Test("a Flatpak app behind xdg-dbus-proxy hears nothing about default items, everything about its own; unconfined clients hear every default item")
    func flatpakApp() throws {
        try #require(FlatpakSandbox.isAvailable, "needs the Debian packages bubblewrap and xdg-dbus-proxy (the Makefile's DEB_TEST)")
        let fixture = try SecretdFixture()
        try Self.writePolicy("""
            [group "\(Self.appID)"]
            [app "flatpak:\(Self.appID)"]
            groups = \(Self.appID)
            """, in: fixture)
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let app = try Self.listener(fixture, "app", fence: "fence-1", sandboxed: true)
        defer { app.stop() }
        let client = try Self.listener(fixture, "client", fence: "fence-2")
        defer { client.stop() }
        let silent = try Self.listener(fixture, "silent", fence: "fence-2")
        defer { silent.stop() }
        let caller = try Self.listener(fixture, "caller", fence: "fence-2")
        defer { caller.stop() }
        for listener in [app, client, silent, caller] {
            #expect(Self.wait(30) { listener.log.contains("{\"ready\"") }, "\(listener.log)")
        }

        // An unconfined client (this test) creates, changes and deletes items of `default`, and
        // so does secret-tool (libsecret).
        let session = try openPlainSession(fixture)
        let first = try createItem(fixture, session, attributes: "{'service': 'mail', 'account': 'a'}", value: "x")
        _ = try fixture.call(first, Self.properties, "Set", "('\(Self.itemInterface)', 'Label', <'renamed'>)")
        _ = try fixture.call(first, Self.properties, "Set",
                             "('\(Self.itemInterface)', 'Attributes', <{'service': 'mail', 'account': 'b'}>)")
        _ = try fixture.call(first, Self.itemInterface, "SetSecret", "(\(Self.secret(session, "y")),)")
        #expect(try fixture.run(["secret-tool", "store", "--label=web", "service", "web"], input: "w1").status == 0)
        #expect(try fixture.run(["secret-tool", "store", "--label=web 2", "service", "web"], input: "w2").status == 0)  // replaced
        let found = try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "({'service': 'web'},)")
        let second = try #require(objectPaths(in: found).first, "\(found)")
        #expect(try fixture.run(["secret-tool", "clear", "service", "web"]).status == 0)
        _ = try fixture.call(first, Self.itemInterface, "Delete")
        // Signals of one sender arrive in order: this collection signal comes after all of those.
        _ = try fixture.call(Self.login, Self.properties, "Set", "('\(Self.collectionInterface)', 'Label', <'fence-1'>)")
        #expect(app.waitForExit(timeout: 60) == 0, "\(app.log)")
        _ = try fixture.call(Self.login, Self.properties, "Set", "('\(Self.collectionInterface)', 'Label', <'fence-2'>)")
        #expect(client.waitForExit(timeout: 60) == 0, "\(client.log)")
        #expect(silent.waitForExit(timeout: 60) == 0, "\(silent.log)")
        #expect(caller.waitForExit(timeout: 60) == 0, "\(caller.log)")
        let defaults = [first, second]

        // The app: secretd names it by its /.flatpak-info, it talks through the proxy (which hides
        // the other clients from it), and broadcasts reach it (the fence).
        let appReport = try Self.report(app)
        #expect(appReport.whoami == ["flatpak:\(Self.appID)", [Self.appID, "flatpak.\(Self.appID)"], Self.appID, true] as [AnyHashable])
        let clientReport = try Self.report(client)
        #expect(appReport.names.contains(SecretServiceNames.busName))
        #expect(!appReport.names.contains(fixture.control.uniqueName) && !appReport.names.contains(clientReport.uniqueName),
                "the proxy shows no other client: \(appReport.names)")
        let fence = try #require(appReport.signals.firstIndex { $0.changed?["Label"] as? String == "fence-1" }, "\(appReport.signals)")
        #expect(appReport.signals[fence].unicast == false && appReport.signals[fence].path == Self.login)
        // Before the fence, nothing at all reached it: no item signal, no Items invalidation,
        // no item's PropertiesChanged.
        #expect(appReport.signals[..<fence].isEmpty, "\(appReport.signals[..<fence])")
        for path in defaults {
            #expect(!appReport.signals.contains { $0.mentions(path) }, "\(path) reached the app")
        }
        // Its own item: every signal, each sent to it alone.
        let own = try #require(appReport.ownItem)
        let after = Array(appReport.signals[(fence + 1)...]).filter { $0.member != "CollectionChanged" }
        // (The collection's Items go out at once or gathered with the next writes', ItemsSchedule.)
        #expect(after.filter { $0.summary != "PropertiesChanged \(Self.login) Items" }.map(\.summary) == [
            "ItemCreated \(own)", "ItemChanged \(own)", "PropertiesChanged \(own) Attributes,Label,Modified", "ItemDeleted \(own)",
        ], "\(after)")
        #expect(after.allSatisfy { $0.unicast })
        // The collection's Items it is sent list its own item only, never a default one.
        let lists = after.compactMap { $0.changed?["Items"] as? [String] }
        #expect(!lists.isEmpty && lists.allSatisfy { $0.allSatisfy { $0 == own } }, "\(after)")
        let renamed = after.first { $0.path == own }
        #expect(renamed?.changed?["Label"] as? String == "own item renamed")

        // The unconfined client hears every signal about the default items, unicast, and
        // nothing about the app's.
        #expect((clientReport.whoami.first as? String)?.hasPrefix("exe:") == true && clientReport.whoami.last == AnyHashable(false))
        let heard = clientReport.signals.filter { signal in defaults.contains { signal.mentions($0) } }
        #expect(heard.allSatisfy { $0.unicast }, "\(heard)")
        for path in defaults {
            for member in ["ItemCreated", "ItemChanged", "ItemDeleted"] {
                #expect(heard.contains { $0.member == member && $0.arguments == [path] }, "\(member) \(path): \(heard)")
            }
        }
        #expect(heard.contains { $0.path == first && $0.changed?["Label"] as? String == "renamed" })
        #expect(heard.contains { $0.path == first && ($0.changed?["Attributes"] as? [String: String])?["account"] == "b" })
        #expect(heard.contains { $0.path == second && $0.changed?["Label"] as? String == "web 2" })  // secret-tool's replace
        #expect(clientReport.signals.contains { $0.path == Self.login && $0.changed?["Items"] != nil && $0.unicast })
        #expect(!clientReport.signals.contains { ($0.changed?["Items"] as? [String])?.contains(own) == true },
                "the app's item was in an outsider's Items")
        #expect(!clientReport.signals.contains { $0.mentions(own) }, "the app's item reached an outsider")

        // A client that never called secretd hears about collections only (the fences).
        let silentReport = try Self.report(silent)
        #expect(silentReport.signals.allSatisfy { !$0.unicast && $0.invalidated?.isEmpty != false }, "\(silentReport.signals)")
        #expect(Set(silentReport.signals.map(\.member)) == ["PropertiesChanged", "CollectionChanged"], "\(silentReport.signals)")
        #expect(silentReport.signals.filter { $0.changed?["Label"] != nil }.count == 2)

        // Nor does one that calls but never reads a collection or an item, as libsecret's
        // store, lookup and clear: it would only have dropped every other client's item signals.
        let callerReport = try Self.report(caller)
        #expect((callerReport.whoami.first as? String)?.hasPrefix("exe:") == true)
        #expect(callerReport.signals.allSatisfy { !$0.unicast && $0.invalidated?.isEmpty != false }, "\(callerReport.signals)")
        #expect(Set(callerReport.signals.map(\.member)) == ["PropertiesChanged", "CollectionChanged"], "\(callerReport.signals)")
    }

    // MARK: - Moves between groups

    @Test("moving an item between groups: clients that lose sight of it hear ItemDeleted, those that gain it ItemCreated, the others ItemChanged")
    func moves() throws {
        let fixture = try SecretdFixture()
        // Two copies of Python are two callers: one a member of the group, one not. This test
        // process is a member too, so it may move items into the group and out.
        let bin = fixture.root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let member = URL(fileURLWithPath: bin.resolvingSymlinksInPath().path).appendingPathComponent("py-member").path
        let outsider = URL(fileURLWithPath: bin.resolvingSymlinksInPath().path).appendingPathComponent("py-outsider").path
        // The release's Python itself (python3 is a link to python3.11 on Debian 12, 3.13 on 13).
        let python = URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path
        for copy in [member, outsider] {
            try ExecutableFile.copy(python, to: copy)
        }
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        try Self.writePolicy("""
            [group "com.example.team"]
            member = exe:\(member)
            member = exe:\(me)
            """, in: fixture)
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let inside = try Self.listener(fixture, "client", fence: "done", python: member)
        defer { inside.stop() }
        let outside = try Self.listener(fixture, "client", fence: "done", python: outsider)
        defer { outside.stop() }
        for listener in [inside, outside] {
            #expect(Self.wait(30) { listener.log.contains("{\"ready\"") }, "\(listener.log)")
        }
        let session = try openPlainSession(fixture)
        let item = try createItem(fixture, session, attributes: "{'service': 'moving'}", value: "x")
        _ = try fixture.call(item, Self.properties, "Set",
                             "('\(Self.itemInterface)', 'Attributes', <{'service': 'moving', 'keychain:access-group': 'com.example.team'}>)")
        // Back: attributes without the group would keep the item where it is.
        _ = try fixture.call(item, Self.properties, "Set",
                             "('\(Self.itemInterface)', 'Attributes', <{'service': 'moving', 'keychain:access-group': 'default'}>)")
        usleep(useconds_t(ItemsSchedule.interval * 1_000_000) + 200_000)  // the gathered Items go out before the fence
        _ = try fixture.call(Self.login, Self.properties, "Set", "('\(Self.collectionInterface)', 'Label', <'done'>)")
        #expect(inside.waitForExit(timeout: 60) == 0, "\(inside.log)")
        #expect(outside.waitForExit(timeout: 60) == 0, "\(outside.log)")

        let insideReport = try Self.report(inside)
        #expect(insideReport.whoami.first == "exe:\(member)" as AnyHashable)
        // The member sees the item all along: it hears of each move as a change.
        #expect(insideReport.signals.filter { $0.mentions(item) }.map(\.summary) == [
            "ItemCreated \(item)",
            "ItemChanged \(item)", "PropertiesChanged \(item) Attributes,Label,Modified",
            "ItemChanged \(item)", "PropertiesChanged \(item) Attributes,Label,Modified",
        ], "\(insideReport.signals)")
        // The outsider loses the item while it is in the group, and has it back after: its
        // group never reaches it.
        let outsideReport = try Self.report(outside)
        let told = outsideReport.signals.filter { $0.mentions(item) }.map(\.summary)
        #expect(told == ["ItemCreated \(item)", "ItemDeleted \(item)", "ItemCreated \(item)"], "\(outsideReport.signals)")
        // Its Items (the first at once, the next gathered: ItemsSchedule) list the item
        // while it may see it: the last one, sent after it is back, lists it.
        let lists = outsideReport.signals.compactMap { $0.changed?["Items"] as? [String] }.map { $0.contains(item) }
        #expect(lists.first == true && lists.last == true, "\(outsideReport.signals)")
        #expect(!outsideReport.signals.contains { $0.changed?["Attributes"].map { "\($0)".contains("com.example.team") } == true })
    }

    // MARK: - The audience, in process

    @Test("the audience of a change: each side of a move hears its own news, locked viewers only Modified")
    func audienceOfAChange() {
        let audience = SignalAudience(
            before: [":1.1": .full, ":1.2": .full, ":1.3": .askable], after: [":1.2": .full, ":1.3": .full, ":1.4": .askable])
        #expect(audience.listeners == [
            .init(name: ":1.1", news: .deleted, access: .full, accessChanged: false),
            .init(name: ":1.2", news: .changed, access: .full, accessChanged: false),
            .init(name: ":1.3", news: .changed, access: .full, accessChanged: true),
            .init(name: ":1.4", news: .created, access: .askable, accessChanged: false),
        ])
        #expect(SignalAudience(before: [:], after: [:]).listeners.isEmpty)
    }

    @Test("who may see an item of a group: default reaches unconfined callers and apps confined to it; ask groups show locked")
    func sight() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sight-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try Provider(options: .init(dataDirectory: directory), store: Store(directory: directory), clock: { Date() }, offLoop: .inline)
        daemon.policy = try AccessPolicy.parse("""
            [group "com.example.team"]
            member = exe:/usr/bin/member
            [group "com.example.ask"]
            ask = yes
            [app "flatpak:org.example.App"]
            groups = org.example.App
            [app "flatpak:org.example.Shared"]
            groups = org.example.Shared, default
            """, file: "f")
        let tool = Caller(identity: CallerIdentity(kind: .exe, name: "/usr/bin/tool"), pid: 1)
        for (name, caller) in [
            ":1.1": tool, ":1.2": Caller(identity: CallerIdentity(kind: .exe, name: "/usr/bin/member"), pid: 2),
            ":1.3": Caller(identity: CallerIdentity(kind: .flatpak, name: "org.example.App"), pid: 3),
            ":1.4": Caller(identity: CallerIdentity(kind: .flatpak, name: "org.example.Shared"), pid: 4),
        ] {
            caller.watchesItems = true
            daemon.callers.add(caller, as: name)
        }
        // A caller that never read a collection or an item sees nothing: it is not told.
        daemon.callers.add(Caller(identity: CallerIdentity(kind: .exe, name: "/usr/bin/member"), pid: 5), as: ":1.5")
        let unconfinedAndShared: [String: ItemAccess] = [":1.1": .full, ":1.2": .full, ":1.4": .full]
        #expect(Announcer(provider: daemon).sight(ofGroup: nil) == unconfinedAndShared)  // an item from before groups
        #expect(Announcer(provider: daemon).sight(ofGroup: "default") == unconfinedAndShared)
        #expect(Announcer(provider: daemon).sight(ofGroup: "com.example.team") == [":1.2": .full])
        #expect(Announcer(provider: daemon).sight(ofGroup: "org.example.App") == [":1.3": .full])
        #expect(Announcer(provider: daemon).sight(ofGroup: "com.example.ask") == [":1.1": .askable, ":1.2": .askable, ":1.3": .askable, ":1.4": .askable])
        tool.allowedOnce.insert("com.example.ask")
        #expect(Announcer(provider: daemon).sight(ofGroup: "com.example.ask")[":1.1"] == .full)
        #expect(Announcer(provider: daemon).sight(ofGroup: "com.example.other") == [:])
        daemon.keyring.store.close()
    }

    @Test("in process: each item signal goes to every entitled caller by name, with the Items it may see")
    func destinations() throws {
        let fixture = try InProcessDaemonTests.Fixture()
        defer { fixture.remove() }
        let daemon = fixture.daemon
        daemon.policy = try AccessPolicy.parse("[group \"\(Self.appID)\"]\n[app \"flatpak:\(Self.appID)\"]\ngroups = \(Self.appID)\n", file: "f")
        let session = try fixture.openSession()  // the test client, :1.42, is an unconfined caller now
        let client = InProcessDaemonTests.Fixture.client
        // It reads the collection, as libsecret's collection objects do: secretd tells it about items.
        #expect(throws: Never.self) {
            try daemon.router.property("Label", interface: Self.collectionInterface, path: Self.login, sender: client).get()
        }
        let app = ":1.50", other = ":1.51", never = ":1.52"  // never: connected, but it has not called
        let storer = ":1.53"  // it calls, but reads no collection or item
        for (name, caller) in [app: Caller(identity: CallerIdentity(kind: .flatpak, name: Self.appID), pid: 50),
                               other: Caller(identity: CallerIdentity(kind: .exe, name: "/usr/bin/other"), pid: 51)] {
            caller.watchesItems = true
            daemon.callers.add(caller, as: name)
        }
        daemon.callers.add(Caller(identity: CallerIdentity(kind: .exe, name: "/usr/bin/storer"), pid: 53), as: storer)
        func create(_ n: Int) -> MethodCall {
            MethodCall(sender: client, path: Self.login, interface: Self.collectionInterface, method: "CreateItem", arguments: [
                .properties([SecretServiceNames.Property.itemLabel: .string("item \(n)"),
                             SecretServiceNames.Property.itemAttributes: .stringMap(["n": "\(n)"])]),
                InProcessDaemonTests.Fixture.secret(session, "s"), .boolean(false),
            ])
        }
        fixture.endpoint.signals.removeAll()
        // Three stores that share a commit, then one more.
        let items = try (0..<3).map { try #require(InProcessDaemonTests.Fixture.call(daemon, create($0)).get().tuple?.first?.objectPath) }
        _ = daemon.commitPending()
        let last = try #require(InProcessDaemonTests.Fixture.call(daemon, create(3)).get().tuple?.first?.objectPath)
        _ = daemon.commitPending()
        let sent = fixture.endpoint.signals
        #expect(sent.allSatisfy { $0.destination != nil && ![app, never, storer].contains($0.destination) }, "\(sent)")
        for item in items + [last] {
            #expect(Set(sent.filter { $0.name == "ItemCreated" && $0.arguments == [.objectPath(item)] }.compactMap(\.destination))
                    == [client, other])
        }
        // The first write's Items go to both at once; the next writes' are gathered into one list
        // sent ItemsSchedule.interval later (DaemonTests.itemsPerWrite sees it over the bus).
        let itemLists = sent.filter { $0.name == "PropertiesChanged" && $0.path == Self.login }
        #expect(itemLists.compactMap(\.destination).sorted() == [client, other], "\(itemLists)")
        #expect(itemLists.allSatisfy { $0.arguments.last == .strings([]) }, "an invalidation: \(itemLists)")

        // A rename tells the label to those who may read it, and nothing to the app.
        fixture.endpoint.signals.removeAll()
        #expect(daemon.router.setProperty("Label", interface: Self.itemInterface, path: last, value: .string("renamed"), sender: client) == nil)
        _ = daemon.commitPending()
        #expect(fixture.endpoint.signals.map { "\($0.name) \($0.path) \($0.destination ?? "everyone")" }.sorted() == [
            "ItemChanged \(Self.login) \(client)", "ItemChanged \(Self.login) \(other)",
            "PropertiesChanged \(last) \(client)", "PropertiesChanged \(last) \(other)",
        ])
        // The collection's own Label is everyone's.
        fixture.endpoint.signals.removeAll()
        #expect(daemon.router.setProperty("Label", interface: Self.collectionInterface, path: Self.login, value: .string("Main"), sender: client) == nil)
        #expect(fixture.endpoint.signals.map(\.destination) == [nil, nil])
    }

    // MARK: - Helpers

    /// Writes `access-groups.conf` (0600) into `fixture`'s configuration directory.
    static func writePolicy(_ text: String, in fixture: SecretdFixture) throws {
        let file = fixture.configDirectory.appendingPathComponent("access-groups.conf")
        try text.write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o600)
    }

    /// Starts `signal-listener.py MODE FENCE` on `fixture`'s bus, under `python` (a copy of
    /// Python is a caller of its own), or `sandboxed` as a Flatpak app.
    static func listener(
        _ fixture: SecretdFixture, _ mode: String, fence: String, sandboxed: Bool = false, python: String = "/usr/bin/python3"
    ) throws -> SupervisedProcess {
        var command = DBusClients.command("signal-listener.py", [mode, fence])
        command[0] = python
        if sandboxed {
            command = try FlatpakSandbox(appID: appID, talkNames: ["org.freedesktop.secrets"]).wrap(command, fixture: fixture)
        }
        return try SupervisedProcess(command, environment: fixture.environment,
                                     logURL: fixture.root.appendingPathComponent("\(mode)-\(UUID().uuidString.prefix(6)).log"))
    }

    /// What a listener printed last.
    struct Report {
        var uniqueName: String
        var whoami: [AnyHashable]
        var names: [String]
        var ownItem: String?
        var signals: [Signal]
    }

    /// One signal a listener received.
    struct Signal: CustomStringConvertible {
        var member: String
        var path: String
        var unicast: Bool
        var arguments: [String]?
        var changed: [String: Any]?
        var invalidated: [String]?

        /// `ItemCreated /path`, `PropertiesChanged /path Label,Modified`, or `… -Items`.
        var summary: String {
            if member == "PropertiesChanged" {
                let names = (changed ?? [:]).keys.sorted().joined(separator: ",")
                return "\(member) \(path) \(names)\((invalidated ?? []).map { "-" + $0 }.joined())"
            }
            return "\(member) \(arguments?.joined(separator: " ") ?? "")"
        }

        /// Whether it names `item`: as its argument, or as the object whose properties changed.
        func mentions(_ item: String) -> Bool { path == item || arguments?.contains(item) == true }

        var description: String { summary + (unicast ? " (unicast)" : " (broadcast)") }
    }

    /// The report on the last line of `listener`'s output.
    static func report(_ listener: SupervisedProcess) throws -> Report {
        let line = try #require(listener.log.split(separator: "\n").last { $0.hasPrefix("{\"mode\"") }, "\(listener.log)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let signals = (object["signals"] as? [[String: Any]] ?? []).map { signal in
            Signal(
                member: signal["member"] as? String ?? "", path: signal["path"] as? String ?? "",
                unicast: signal["unicast"] as? Bool ?? false, arguments: signal["args"] as? [String],
                changed: signal["changed"] as? [String: Any], invalidated: signal["invalidated"] as? [String])
        }
        let whoami = (object["whoami"] as? [Any] ?? []).map { value -> AnyHashable in
            if let text = value as? String { return text }
            if let list = value as? [String] { return list }
            return (value as? Bool) ?? false
        }
        return Report(uniqueName: object["unique_name"] as? String ?? "", whoami: whoami,
                      names: object["names"] as? [String] ?? [], ownItem: object["own_item"] as? String, signals: signals)
    }

    /// Polls `condition` for up to `seconds`.
    static func wait(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }
}

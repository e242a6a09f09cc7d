import Foundation
import KeychainTestSupport
import Testing

/// Many real clients at once (Python `secretstorage`, one process each) against one secretd,
/// while another client locks and unlocks the keyring: no failures but the documented ones
/// (IsLocked while locked), and the final state equals what each client's model says. What
/// the load costs secretd in memory is a figure of `make bench` (the `load` scenario), not a test.
@Suite struct LoadTests {
    /// One client: 500 random operations on its own 20 keys, keeping a model of what it stored.
    /// Prints its model and failures as JSON.
    static let client = #"""
        import sys, random, json
        import secretstorage
        from secretstorage.exceptions import LockedException
        from jeepney.wrappers import DBusErrorResponse
        name, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        rng = random.Random(seed)
        conn = secretstorage.dbus_init()
        coll = secretstorage.get_default_collection(conn)
        model, failures, locked = {}, [], 0
        for n in range(count):
            key = "k%d" % rng.randrange(20)
            attrs = {"load": name, "key": key}
            op = rng.choice(["store", "store", "lookup", "search", "delete"])
            try:
                if op == "store":
                    value = "%s-%d" % (name, n)
                    coll.create_item(key, attrs, value.encode(), replace=True)
                    model[key] = value
                elif op == "lookup":
                    items = list(coll.search_items(attrs))
                    got = items[0].get_secret().decode() if items else None
                    if got != model.get(key):
                        failures.append("lookup %s: %r != %r" % (key, got, model.get(key)))
                elif op == "search":
                    attributes = [i.get_attributes() for i in coll.search_items({"load": name})]
                    if any(not a for a in attributes):
                        raise LockedException("locked items show no attributes (secretd seals them)")
                    found = {a["key"] for a in attributes}
                    if found != set(model):
                        failures.append("search: %r != %r" % (sorted(found), sorted(model)))
                else:
                    for item in coll.search_items(attrs):
                        item.delete()
                    model.pop(key, None)
            except LockedException:
                locked += 1
            except DBusErrorResponse as error:
                if error.name == "org.freedesktop.Secret.Error.IsLocked":
                    locked += 1
                else:
                    failures.append("%s %s: %s" % (op, key, error))
            except Exception as error:
                failures.append("%s %s: %s: %s" % (op, key, type(error).__name__, error))
        print(json.dumps({"name": name, "model": model, "failures": failures[:5], "failure_count": len(failures), "locked": locked}))
        """#

    /// Locks the login keyring and unlocks it with its password, `rounds` times.
    static let locker = #"""
        import sys, time
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection
        conn = open_dbus_connection(bus="SESSION")
        B = "org.freedesktop.secrets"
        svc = DBusAddress("/org/freedesktop/secrets", bus_name=B, interface="org.freedesktop.Secret.Service")
        ext = DBusAddress("/org/freedesktop/secrets", bus_name=B, interface="org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")
        login = "/org/freedesktop/secrets/collection/login"
        session = conn.send_and_get_reply(new_method_call(svc, "OpenSession", "sv", ("plain", ("s", "")))).body[1]
        for _ in range(int(sys.argv[1])):
            time.sleep(0.4)
            conn.send_and_get_reply(new_method_call(svc, "Lock", "ao", ([login],)))
            time.sleep(0.1)
            reply = conn.send_and_get_reply(new_method_call(ext, "UnlockWithMasterPassword", "o(oayays)",
                (login, (session, b"", b"login-password", "text/plain"))))
            if reply.header.message_type.name == "error":
                print("unlock failed:", reply.body); sys.exit(1)
        """#

    @Test("16 clients x 500 operations while the keyring is locked and unlocked: model kept, no other failures")
    func manyClients() throws {
        let fixture = try SecretdFixture()
        // Lookups answered in GDBus's thread race the writes, locks and unlocks (counted below).
        fixture.environment["SECRETD_TRACE_QUICK_READS"] = "1"
        try Self.client.write(to: fixture.root.appendingPathComponent("client.py"), atomically: true, encoding: .utf8)
        try Self.locker.write(to: fixture.root.appendingPathComponent("locker.py"), atomically: true, encoding: .utf8)
        let daemon = try fixture.start()
        defer { daemon.stop() }

        let clients = try (0..<16).map { index in
            try SupervisedProcess(
                ["/usr/bin/python3", fixture.root.appendingPathComponent("client.py").path, "c\(index)", "500", "\(index)"],
                environment: fixture.environment, logURL: fixture.root.appendingPathComponent("client\(index).out"))
        }
        let locker = try SupervisedProcess(
            ["/usr/bin/python3", fixture.root.appendingPathComponent("locker.py").path, "6"],
            environment: fixture.environment, logURL: fixture.root.appendingPathComponent("locker.out"))
        #expect(locker.waitForExit(timeout: 120) == 0, "\(locker.log)")
        var lockedRefusals = 0
        var storedValues: [String] = []
        for (index, client) in clients.enumerated() {
            #expect(client.waitForExit(timeout: 300) == 0, "\(client.log)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(client.log.utf8)) as? [String: Any], "\(client.log)")
            #expect(report["failure_count"] as? Int == 0, "client \(index): \(report["failures"] ?? "")")
            lockedRefusals += report["locked"] as? Int ?? 0
            // The keyring holds exactly the client's model.
            let model = report["model"] as? [String: String] ?? [:]
            storedValues += model.values
            for key in (0..<20).map({ "k\($0)" }) {
                let found = try fixture.run(["secret-tool", "lookup", "load", "c\(index)", "key", key])
                #expect((found.status == 0 ? found.text : nil) == model[key], "c\(index) \(key)")
            }
        }
        print("load: \(lockedRefusals) refusals while locked")
        #expect(daemon.isRunning)
        #expect(QuickReadTests.quickAnswers("GetSecret", in: daemon) >= 10, "lookups answered in GDBus's thread")
        // Nothing secret reaches the log: not the password, not a stored value.
        let log = daemon.log
        #expect(!log.contains("login-password"))
        #expect(!storedValues.isEmpty && !storedValues.contains { log.contains($0) })
    }
}

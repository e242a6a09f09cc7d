import Foundation
import KeychainTestSupport
import Testing

/// Many real clients at once (Python `secretstorage`, one process each) against one secretd,
/// while another client locks and unlocks the keyring: no failures but the documented ones
/// (IsLocked while locked), and the final state equals what each client's model says. The
/// clients are scripts/dbus-clients' `load-client.py` and `locker.py`; what the load costs
/// secretd in memory is a figure of `make bench` (the `load` scenario), not a test.
@Suite struct LoadTests {
    @Test("16 clients x 500 operations while the keyring is locked and unlocked: model kept, no other failures")
    func manyClients() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }

        let clients = try (0..<16).map { index in
            try SupervisedProcess(
                DBusClients.command("load-client.py", ["c\(index)", "500", "\(index)"]),
                environment: fixture.environment, logURL: fixture.root.appendingPathComponent("client\(index).out"))
        }
        let locker = try SupervisedProcess(
            DBusClients.command("locker.py", ["6"]),
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
        // Nothing secret reaches the log: not the password, not a stored value.
        let log = daemon.log
        #expect(!log.contains("login-password"))
        #expect(!storedValues.isEmpty && !storedValues.contains { log.contains($0) })
    }
}

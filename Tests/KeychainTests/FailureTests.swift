import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

extension ProviderTests {
    /// These stop the provider or lock its collection, and put things back afterwards.
    @Suite struct Failures {
        init() throws { _ = try environment() }

        @Test("a locked collection gives .locked without hanging, and nothing changes")
        func lockedCollection() async throws {
            let service = uniqueService()
            try await Keychain.setPassword("before", service: service, account: "alice")
            try environment().lockDefaultCollection()
            do {
                // No prompter on the private bus: the provider dismisses the unlock prompt.
                #expect(try await keychainError { _ = try await Keychain.password(service: service, account: "alice") }
                        == .locked)
                #expect(try await keychainError { try await Keychain.setPassword("after", service: service, account: "alice") }
                        == .locked)
                #expect(try await keychainError { try await Keychain.setPassword("new", service: service, account: "bob") }
                        == .locked)
                // Listing never prompts. gnome-keyring shows a locked item's attributes, so it
                // lists; secretd seals them, so a list would leave the item out: .locked instead.
                let sealsAttributes = try environment().command.arguments[0].hasSuffix("secretd")
                if sealsAttributes {
                    #expect(try await keychainError { _ = try await Keychain.accounts(service: service) } == .locked)
                    #expect(try await keychainError { _ = try await Keychain(service: service).attributes(for: "alice") } == .locked)
                } else {
                    #expect(try await Keychain.accounts(service: service).map(\.account) == ["alice"])
                    #expect(try await Keychain(service: service).attributes(for: "alice")?.account == "alice")
                }
            }
            try environment().unlockDefaultCollection()
            #expect(try await Keychain.password(service: service, account: "alice") == "before")
            #expect(try await Keychain.password(service: service, account: "bob") == nil)
        }

        @Test("no provider on the bus is .noProvider, promptly, for every kind of call")
        func noProvider() async throws {
            let service = uniqueService()
            try await Keychain.setPassword("kept", service: service, account: "alice")
            try environment().stopProvider()
            let errors = try await withinDeadline(20) { () -> [KeychainError?] in
                var errors: [KeychainError?] = []
                func capture(_ body: () async throws(KeychainError) -> Void) async {
                    do { try await body(); errors.append(nil) } catch { errors.append(error) }
                }
                await capture { () async throws(KeychainError) in _ = try await Keychain.password(service: service, account: "alice") }
                await capture { () async throws(KeychainError) in try await Keychain.setPassword("x", service: service, account: "alice") }
                await capture { () async throws(KeychainError) in _ = try await Keychain.allAccounts() }
                await capture { () async throws(KeychainError) in _ = try await Keychain.deletePassword(service: service, account: "alice") }
                return errors
            }
            try environment().startProvider()
            #expect(errors.count == 4)
            for error in errors {
                guard case .noProvider(let reason)? = error else {
                    Issue.record("expected .noProvider, got \(String(describing: error))")
                    continue
                }
                #expect(reason.contains("org.freedesktop.secrets"))
            }
            // The provider is back (restarted and unlocked): the item is still there.
            #expect(try await Keychain.password(service: service, account: "alice") == "kept")
        }

        @Test("the library's own failures are cases of their own: a missing alias, a provider without access groups")
        func ownFailures() throws {
            #expect(throws: KeychainError.noSuchKeyring(alias: "no-such-keyring")) {
                try KeychainProvider.lock(alias: "no-such-keyring")
            }
            #expect(throws: KeychainError.noSuchKeyring(alias: "no-such-keyring")) {
                try KeychainProvider.unlock(alias: "no-such-keyring", password: Array("x".utf8))
            }
            // A store goes straight to the alias's path first; with nothing there, the error
            // still names the alias, and no item is left anywhere.
            let service = uniqueService()
            #expect(throws: KeychainError.noSuchKeyring(alias: "no-such-keyring")) {
                try Keychain(service: service, collection: KeychainCollection(alias: "no-such-keyring")).set("x", for: "alice")
            }
            #expect(try Keychain(service: service).string(for: "alice") == nil)
            if try environment().command.arguments[0].hasSuffix("secretd") {
                #expect(try !KeychainProvider.whoAmI().identity.isEmpty)
            } else {
                #expect(throws: KeychainError.notSupported(feature: "access groups (secretd has them)")) {
                    try KeychainProvider.whoAmI()
                }
            }
        }

        @Test("a restarted provider is picked up without resetting anything")
        func providerRestart() throws {
            let service = uniqueService()
            try Keychain.setPassword("persisted", service: service, account: "alice")
            // Restart behind the library's back: its cached session is gone on the new provider.
            try environment().restartProviderKeepingConnection()
            #expect(try Keychain.password(service: service, account: "alice") == "persisted")
        }
    }
}

extension ProviderTests.Failures {
    @Test("with no session bus at all, a program gets a one-line .noProvider error, not a hang")
    func noBusAtAll() throws {
        let demo = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("keychain-demo")
        try #require(FileManager.default.isExecutableFile(atPath: demo.path), "build keychain-demo first")
        let emptyRuntime = try environment().root.appendingPathComponent("empty-runtime")
        try FileManager.default.createDirectory(at: emptyRuntime, withIntermediateDirectories: true)
        // No DBUS_SESSION_BUS_ADDRESS, no bus socket in XDG_RUNTIME_DIR, no DISPLAY to autolaunch with.
        let result = try environment().run(
            ["env", "-u", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR=\(emptyRuntime.path)", demo.path],
            input: Data("not-a-real-secret".utf8))
        #expect(result.status == 1)
        let lines = result.errorOutput.split(separator: "\n").filter { !$0.contains("WARNING") && !$0.isEmpty }
        #expect(lines.count == 1, "\(result.errorOutput)")
        #expect(result.errorOutput.contains("keychain-demo: no Secret Service provider:"))
        #expect(!result.errorOutput.contains("not-a-real-secret"))
    }
}

extension ProviderTests.Failures {
    @Test("cancelling the calling task cancels the libsecret call: .cancelled, and nothing breaks")
    func cancellation() async throws {
        let service = uniqueService()
        try await Keychain.setPassword("kept", service: service, account: "alice")
        let task = Task { () -> KeychainError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                _ = try await Keychain.password(service: service, account: "alice")
                return nil
            } catch {
                return error as? KeychainError
            }
        }
        let failure = await task.value
        #expect(failure == .cancelled)
        // The next call, not cancelled, works as before.
        #expect(try await Keychain.password(service: service, account: "alice") == "kept")
    }
}

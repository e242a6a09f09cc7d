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
                let read = try await withinDeadline(20) { () -> KeychainError? in
                    do {
                        _ = try await Keychain.password(service: service, account: "alice")
                        return nil
                    } catch { return error as? KeychainError }
                }
                #expect(read == .locked)
                let write = try await withinDeadline(20) { () -> KeychainError? in
                    do {
                        try await Keychain.setPassword("after", service: service, account: "alice")
                        return nil
                    } catch { return error as? KeychainError }
                }
                #expect(write == .locked)
                let create = try await withinDeadline(20) { () -> KeychainError? in
                    do {
                        try await Keychain.setPassword("new", service: service, account: "bob")
                        return nil
                    } catch { return error as? KeychainError }
                }
                #expect(create == .locked)
                // Listing never prompts and still works on a locked keyring.
                #expect(try await Keychain.accounts(service: service).map(\.account) == ["alice"])
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

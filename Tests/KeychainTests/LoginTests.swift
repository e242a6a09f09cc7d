import Foundation
import KeychainTestSupport
import Synchronization
import Testing

@testable import Keychain

/// A stand-in for the person at the prompt: answers each request with the next scripted step
/// and records every request it was shown.
final class ScriptedPrompter: LoginPrompter {
    enum Step: Sendable {
        case answer(account: String, password: String, remember: Bool)
        case cancel
    }

    private let state: Mutex<(steps: [Step], requests: [LoginPromptRequest])>

    init(_ steps: [Step] = []) {
        state = Mutex((steps, []))
    }

    /// Every request shown so far.
    var requests: [LoginPromptRequest] { state.withLock { $0.requests } }

    func ask(_ request: LoginPromptRequest) async throws(KeychainError) -> LoginAnswer? {
        let step = state.withLock { state -> Step? in
            state.requests.append(request)
            return state.steps.isEmpty ? nil : state.steps.removeFirst()
        }
        switch step {
        case .answer(let account, let password, let remember)?:
            return LoginAnswer(credential: LoginCredential(account: account, password: password), remember: remember)
        case .cancel?:
            return nil
        case nil:
            throw .noPrompter(reason: "the script has no more answers")
        }
    }
}

/// A stand-in for the service being logged in to: accounts and their passwords, and every
/// credential tried, in order.
final class ScriptedServer: Sendable {
    struct NetworkDown: Error {}

    private let state: Mutex<(passwords: [String: String], tried: [String], down: Bool)>

    init(_ passwords: [String: String], down: Bool = false) {
        state = Mutex((passwords, [], down))
    }

    /// "account:password" of every credential tried.
    var tried: [String] { state.withLock { $0.tried } }

    func setPassword(_ password: String, for account: String) {
        state.withLock { $0.passwords[account] = password }
    }

    func authenticate(_ credential: LoginCredential) -> LoginOutcome {
        state.withLock { state in
            state.tried.append("\(credential.account):\(credential.password)")
            if state.down { return .failed(NetworkDown()) }
            return state.passwords[credential.account] == credential.password ? .success : .rejected
        }
    }
}

extension ProviderTests {
    /// `Keychain.login`: git's fill/approve/reject semantics against the real provider, with a
    /// scripted person and a scripted service.
    @Suite struct Login {
        init() throws { _ = try environment() }

        @Test("a remembered credential that works is used without a prompt and stays as it is")
        func rememberedWorks() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            try await keychain.set("right", for: "alice")
            let server = ScriptedServer(["alice": "right"])
            let prompter = ScriptedPrompter()
            let result = try await Keychain.login(service: service, account: "alice", prompt: prompter) {
                server.authenticate($0)
            }
            guard case .success(let success) = result else { Issue.record("expected success, got \(result)"); return }
            #expect(success == LoginSuccess(account: "alice", source: .remembered, isRemembered: true))
            #expect(server.tried == ["alice:right"])
            #expect(prompter.requests.isEmpty)
            #expect(try await keychain.string(for: "alice") == "right")

            // Without an account, the one remembered for the service is used.
            let other = uniqueService()
            try await Keychain.setPassword("other", service: other, account: "bob")
            server.setPassword("other", for: "bob")
            let anyAccount = try await Keychain.login(service: other, prompt: prompter) { server.authenticate($0) }
            guard case .success(let latest) = anyAccount else { Issue.record("expected success"); return }
            #expect(latest.account == "bob")
            #expect(prompter.requests.isEmpty)
        }

        @Test("a rejected remembered credential is erased; the person is asked with the account pre-filled")
        func rememberedRejected() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            try await keychain.set("old", for: "alice")
            let server = ScriptedServer(["alice": "new"])
            let prompter = ScriptedPrompter([.answer(account: "alice", password: "new", remember: false)])
            let result = try await Keychain.login(service: service, prompt: prompter) { credential in
                server.authenticate(credential)
            }
            guard case .success(let success) = result else { Issue.record("expected success, got \(result)"); return }
            #expect(success == LoginSuccess(account: "alice", source: .prompted, isRemembered: false))
            #expect(server.tried == ["alice:old", "alice:new"])
            #expect(prompter.requests.map(\.account) == ["alice"])
            #expect(prompter.requests.first?.reason == .rememberedRejected)
            #expect(prompter.requests.first?.asksToRemember == true)
            // Erased, and the typed one was not kept: the person did not ask to remember it.
            #expect(try await keychain.string(for: "alice") == nil)
        }

        @Test("rejected, but the keyring got a newer password meanwhile: the newer one stays")
        func rejectedButChangedMeanwhile() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            try await keychain.set("old", for: "alice")
            let server = ScriptedServer(["alice": "newest"])
            let prompter = ScriptedPrompter([.cancel])
            let error = try await keychainError {
                _ = try await Keychain.login(service: service, account: "alice", prompt: prompter) { credential in
                    // Another program stores a newer password while this one is being tried.
                    if credential.password == "old" { try? await keychain.set("newer", for: "alice") }
                    return server.authenticate(credential)
                }
            }
            #expect(error == .cancelled)
            #expect(server.tried == ["alice:old"])
            #expect(try await keychain.string(for: "alice") == "newer")
        }

        @Test("another failure keeps the remembered credential, stops at once and stores nothing")
        func otherFailureChangesNothing() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            try await keychain.set("right", for: "alice")
            let down = ScriptedServer(["alice": "right"], down: true)
            let prompter = ScriptedPrompter([.answer(account: "alice", password: "typed", remember: true)])
            let result = try await Keychain.login(service: service, account: "alice", prompt: prompter) {
                down.authenticate($0)
            }
            guard case .failed(let error) = result else { Issue.record("expected failed, got \(result)"); return }
            #expect(error is ScriptedServer.NetworkDown)
            #expect(prompter.requests.isEmpty)
            #expect(try await keychain.string(for: "alice") == "right")

            // A typed credential that meets a failure is not stored, even with .always.
            let result2 = try await Keychain.login(
                service: service, account: "carol", remember: .always, prompt: prompter
            ) { down.authenticate($0) }
            guard case .failed = result2 else { Issue.record("expected failed, got \(result2)"); return }
            #expect(prompter.requests.count == 1)
            #expect(try await keychain.string(for: "carol") == nil)
        }

        @Test("a typed credential is stored only once it works, and only when remembering was chosen")
        func storedOnlyOnSuccess() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            let server = ScriptedServer(["alice": "right"])
            let prompter = ScriptedPrompter([
                .answer(account: "alice", password: "wrong", remember: true),
                .answer(account: "alice", password: "right", remember: true),
            ])
            let storedBefore = Mutex<[String?]>([])
            let result = try await Keychain.login(service: service, prompt: prompter) { credential in
                let stored = try? await keychain.string(for: "alice")
                storedBefore.withLock { $0.append(stored ?? nil) }
                return server.authenticate(credential)
            }
            guard case .success(let success) = result else { Issue.record("expected success, got \(result)"); return }
            #expect(success == LoginSuccess(account: "alice", source: .prompted, isRemembered: true))
            // Nothing was stored while the wrong one was tried, nor after it was rejected.
            #expect(storedBefore.withLock { $0 } == [nil, nil])
            #expect(prompter.requests.map(\.reason) == [.noRememberedCredential, .rejected])
            #expect(prompter.requests.map(\.account) == [nil, "alice"])
            #expect(try await keychain.string(for: "alice") == "right")
        }

        @Test("remember: .ask without a yes, and .never, store nothing; .always stores without asking")
        func rememberPolicies() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            let server = ScriptedServer(["alice": "right"])
            for (policy, chosen, expectStored) in [
                (LoginRememberPolicy.ask, false, false), (.never, true, false), (.always, false, true),
            ] {
                let prompter = ScriptedPrompter([.answer(account: "alice", password: "right", remember: chosen)])
                let result = try await Keychain.login(service: service, account: "alice", remember: policy, prompt: prompter) {
                    server.authenticate($0)
                }
                guard case .success(let success) = result else { Issue.record("expected success, got \(result)"); return }
                #expect(success.isRemembered == expectStored, "\(policy)")
                #expect(prompter.requests.first?.asksToRemember == (policy == .ask), "\(policy)")
                #expect(try await keychain.string(for: "alice") == (expectStored ? "right" : nil), "\(policy)")
            }
        }

        @Test("prompts are bounded: three by default, then .rejected with nothing stored")
        func attemptsBounded() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            try await keychain.set("stale", for: "alice")
            let server = ScriptedServer(["alice": "unguessable"])
            let answers = (1...5).map { ScriptedPrompter.Step.answer(account: "alice", password: "guess\($0)", remember: true) }
            let prompter = ScriptedPrompter(answers)
            let result = try await Keychain.login(service: service, account: "alice", prompt: prompter) {
                server.authenticate($0)
            }
            guard case .rejected = result else { Issue.record("expected rejected, got \(result)"); return }
            #expect(Keychain.defaultLoginPrompts == 3)
            #expect(server.tried == ["alice:stale", "alice:guess1", "alice:guess2", "alice:guess3"])
            #expect(prompter.requests.map(\.attempt) == [1, 2, 3])
            #expect(prompter.requests.map(\.maximumAttempts) == [3, 3, 3])
            #expect(prompter.requests.map(\.reason) == [.rememberedRejected, .rejected, .rejected])
            #expect(prompter.requests.last?.message == "The password was not accepted (attempt 3 of 3).")
            #expect(try await keychain.string(for: "alice") == nil)

            let once = ScriptedPrompter(answers)
            let single = try await Keychain.login(service: service, account: "alice", prompt: once, maximumPrompts: 1) {
                server.authenticate($0)
            }
            guard case .rejected = single else { Issue.record("expected rejected, got \(single)"); return }
            #expect(once.requests.count == 1)
        }

        @Test("with no way to ask, the call fails at once with .noPrompter; a working remembered one needs none")
        func noWayToAsk() async throws {
            let service = uniqueService()
            let nowhere = FirstAvailableLoginPrompter([
                TerminalLoginPrompter(terminal: "/nonexistent/tty"), PinentryLoginPrompter(program: "/nonexistent/pinentry"),
            ])
            let server = ScriptedServer(["alice": "right"])
            let error = try await keychainError(within: 10) {
                _ = try await Keychain.login(service: service, account: "alice", prompt: nowhere) { server.authenticate($0) }
            }
            guard case .noPrompter(let reason)? = error else { Issue.record("expected .noPrompter, got \(String(describing: error))"); return }
            #expect(reason.contains("/nonexistent/tty"))
            #expect(reason.contains("/nonexistent/pinentry"))
            #expect(server.tried.isEmpty)

            try await Keychain.setPassword("right", service: service, account: "alice")
            let result = try await Keychain.login(service: service, account: "alice", prompt: nowhere) { server.authenticate($0) }
            guard case .success = result else { Issue.record("expected success, got \(result)"); return }
        }

        @Test("an accepted credential under another account name moves the remembered one there")
        func accountRenamed() async throws {
            let service = uniqueService()
            let keychain = try Keychain(service: service)
            try await keychain.set("pw", for: "Alice@Example.com")
            let result = try await Keychain.login(service: service, account: "Alice@Example.com", prompt: ScriptedPrompter()) {
                credential in credential.password == "pw" ? .accepted(account: "alice") : .rejected
            }
            guard case .success(let success) = result else { Issue.record("expected success, got \(result)"); return }
            #expect(success == LoginSuccess(account: "alice", source: .remembered, isRemembered: true))
            #expect(try await keychain.string(for: "alice") == "pw")
            #expect(try await keychain.string(for: "Alice@Example.com") == nil)
        }

        @Test("cancelling the prompt throws .cancelled and stores nothing; an empty account is refused")
        func cancelled() async throws {
            let service = uniqueService()
            let server = ScriptedServer(["alice": "right"])
            let error = try await keychainError {
                _ = try await Keychain.login(service: service, prompt: ScriptedPrompter([.cancel])) { server.authenticate($0) }
            }
            #expect(error == .cancelled)
            #expect(server.tried.isEmpty)
            #expect(try await Keychain.accounts(service: service).isEmpty)
            let empty = try await keychainError {
                _ = try await Keychain.login(service: service, account: "") { server.authenticate($0) }
            }
            #expect(empty == .invalidInput(.empty(field: "account")))
        }

        @Test("a credential's description never shows the password")
        func descriptionHidesPassword() {
            let credential = LoginCredential(account: "alice", password: "hunter2")
            #expect(!"\(credential)".contains("hunter2"))
            #expect(!String(reflecting: credential).contains("hunter2"))
            #expect(credential.withPasswordBytes { Array($0) } == Array("hunter2".utf8))
        }
    }
}

// The "remember password" login flow, with git's credential semantics (fill, approve, reject):
// a remembered credential is tried first; a rejected one is erased only if the keyring still
// holds that very password; a typed one is stored only after it worked and only if the person
// chose to remember it; any other failure changes nothing.

/// What `authenticate` reports about one credential in
/// ``Keychain/login(account:remember:prompt:maximumPrompts:authenticate:)``.
public enum LoginOutcome: Sendable {
    /// The service accepted the credential. `account` is the name the service knows the account
    /// by when that differs from the one tried (a canonical spelling, a renamed account); the
    /// remembered credential then moves to that name. `nil` keeps the account as tried.
    case accepted(account: String?)
    /// The service rejected the credential (wrong password, unknown account).
    case rejected
    /// Anything else went wrong (network down, timeout, server error); the keyring is left as
    /// it is and the flow stops, handing the error back in ``LoginResult/failed(_:)``.
    case failed(any Error)

    /// The service accepted the credential as tried: `.accepted(account: nil)`.
    public static var success: LoginOutcome { .accepted(account: nil) }
}

/// Whether a credential typed at a prompt is stored once it works.
public enum LoginRememberPolicy: Sendable, Equatable {
    /// The prompter asks ("Remember the password? [y/N]"); the person decides.
    case ask
    /// Always store a typed credential that works; the prompter does not ask.
    case always
    /// Never store a typed credential; the prompter does not ask. A credential that is already
    /// remembered is still tried (and erased if it is rejected).
    case never
}

/// How a login ended.
public enum LoginResult: Sendable {
    /// A credential was accepted.
    case success(LoginSuccess)
    /// Every credential tried was rejected: the remembered one (if any) and the one typed at each
    /// of the prompts. None of the typed ones was stored.
    case rejected
    /// `authenticate` reported another failure, passed on unchanged; the keyring was not
    /// changed because of it.
    case failed(any Error)
}

/// The details of a successful login.
public struct LoginSuccess: Sendable, Equatable {
    /// Where the accepted credential came from.
    public enum Source: Sendable, Equatable {
        /// The keyring.
        case remembered
        /// A prompt.
        case prompted
    }

    /// The account that was accepted (the service's name for it, when it gave one).
    public var account: String
    /// Where the accepted credential came from.
    public var source: Source
    /// Whether the keyring holds the accepted credential now.
    public var isRemembered: Bool
    /// Why storing or moving the accepted credential failed, when it did; the login itself
    /// succeeded all the same.
    public var keychainError: KeychainError?

    /// A description of a successful login.
    public init(account: String, source: Source, isRemembered: Bool, keychainError: KeychainError? = nil) {
        self.account = account
        self.source = source
        self.isRemembered = isRemembered
        self.keychainError = keychainError
    }
}

extension Keychain {
    /// How many times the login flow prompts by default before it gives up (3).
    public static let defaultLoginPrompts = 3

    /// Logs in to `service` with a remembered password, or with one the person types; see
    /// ``login(account:remember:prompt:maximumPrompts:authenticate:)``.
    nonisolated(nonsending)
    public static func login(
        service: String, account: String? = nil, remember: LoginRememberPolicy = .ask,
        prompt: any LoginPrompter = FirstAvailableLoginPrompter.standard,
        maximumPrompts: Int = Keychain.defaultLoginPrompts,
        authenticate: (LoginCredential) async -> LoginOutcome
    ) async throws(KeychainError) -> LoginResult {
        try await Keychain(service: service).login(
            account: account, remember: remember, prompt: prompt, maximumPrompts: maximumPrompts,
            authenticate: authenticate)
    }

    /// Logs in with a remembered password, or with one the person types, remembering it only
    /// once it works and only if they chose to.
    ///
    /// ```swift
    /// let result = try await Keychain.login(service: "imap.example.com", account: "alice") { credential in
    ///     do {
    ///         try await imap.login(credential.account, credential.password)
    ///         return .success
    ///     } catch IMAPError.authenticationFailed {
    ///         return .rejected
    ///     } catch {
    ///         return .failed(error)
    ///     }
    /// }
    /// ```
    ///
    /// The steps, as git's credential helpers work (fill, approve, reject):
    /// 1. The remembered credential (for `account`, or the most recently changed one of this
    ///    service when `account` is `nil`) is tried first. Accepted: it stays (moved to the
    ///    account name the service gave, if it gave another). Rejected: it is erased, but only
    ///    if the keyring still holds that very password (another program may have stored a
    ///    newer one meanwhile, which stays), and the flow goes on to prompt.
    /// 2. `prompt` asks for the account (pre-filled) and password, at most `maximumPrompts`
    ///    times (3 by default) while `authenticate` rejects what is typed. A typed credential is
    ///    stored only when it is accepted, and only if `remember` is `.always`, or `.ask` and
    ///    the person chose to remember it.
    /// 3. `authenticate` reporting ``LoginOutcome/failed(_:)`` ends the flow at once and
    ///    changes nothing in the keyring.
    ///
    /// Nothing is prompted while a remembered credential works, so the call works without a
    /// terminal then. `authenticate` runs on the caller's executor; the keyring calls and the
    /// prompts run on threads of their own. Passwords are held in wiped buffers (see
    /// ``LoginCredential``) and are never part of an error.
    ///
    /// - Parameters:
    ///   - account: The account to log in as; `nil` to use the remembered one, if any, and
    ///     otherwise let the person type it.
    ///   - remember: Whether a typed credential that works is stored.
    ///   - prompt: Who asks the person; by default the terminal, then pinentry.
    ///   - maximumPrompts: How many times to prompt at most (at least 1).
    ///   - authenticate: Tries a credential against the service.
    /// - Returns: ``LoginResult/success(_:)``, ``LoginResult/rejected`` when every attempt was
    ///   rejected, or ``LoginResult/failed(_:)`` with `authenticate`'s own failure.
    /// - Throws: ``KeychainError/noPrompter(reason:)`` at once when a prompt is needed and there is
    ///   no way to show one; ``KeychainError/cancelled`` when the person cancels a prompt (or the
    ///   task is cancelled); ``KeychainError/invalidInput(_:)`` for an empty account or
    ///   `maximumPrompts` below 1; any other ``KeychainError`` from reading or erasing the
    ///   remembered credential.
    nonisolated(nonsending)
    public func login(
        account: String? = nil, remember: LoginRememberPolicy = .ask,
        prompt: any LoginPrompter = FirstAvailableLoginPrompter.standard,
        maximumPrompts: Int = Keychain.defaultLoginPrompts,
        authenticate: (LoginCredential) async -> LoginOutcome
    ) async throws(KeychainError) -> LoginResult {
        if let account { try Validation.text(account, field: "account") }
        guard maximumPrompts >= 1 else { throw .invalidInput(.empty(field: "maximum prompts")) }

        var prefilled = account
        var reason = LoginPromptRequest.Reason.noRememberedCredential
        if let remembered = try await rememberedCredential(account: account) {
            switch await authenticate(remembered) {
            case .accepted(let renamed):
                var success = LoginSuccess(account: remembered.account, source: .remembered, isRemembered: true)
                if let renamed, renamed != remembered.account {
                    success.account = renamed
                    success.keychainError = await move(remembered, to: renamed)
                    success.isRemembered = success.keychainError == nil
                }
                return .success(success)
            case .rejected:
                _ = try await eraseIfUnchanged(remembered)
                prefilled = remembered.account
                reason = .rememberedRejected
            case .failed(let error):
                return .failed(error)
            }
        }

        for attempt in 1...maximumPrompts {
            if Task.isCancelled { throw .cancelled }
            let request = LoginPromptRequest(
                service: service, account: prefilled, reason: reason, attempt: attempt,
                maximumAttempts: maximumPrompts, asksToRemember: remember == .ask)
            guard let answer = try await prompt.ask(request) else { throw .cancelled }
            let typed = answer.credential
            try Validation.text(typed.account, field: "account")
            switch await authenticate(typed) {
            case .accepted(let renamed):
                let name = renamed ?? typed.account
                var success = LoginSuccess(account: name, source: .prompted, isRemembered: false)
                if remember == .always || (remember == .ask && answer.remember) {
                    success.keychainError = await store(typed, as: name)
                    success.isRemembered = success.keychainError == nil
                }
                return .success(success)
            case .rejected:
                prefilled = typed.account
                reason = .rejected
            case .failed(let error):
                return .failed(error)
            }
        }
        return .rejected
    }

    // MARK: - Keyring steps (each on a thread of its own)

    /// The remembered credential for `account`, or for the service's most recently changed
    /// account when `account` is `nil`.
    private func rememberedCredential(account: String?) async throws(KeychainError) -> LoginCredential? {
        let scope = self.scope
        return try await BlockingCall.run { () throws(KeychainError) -> LoginCredential? in
            let name: String
            if let account {
                name = account
            } else {
                guard let newest = try scope.items().max(by: { $0.modified < $1.modified }) else { return nil }
                name = newest.account
            }
            return try scope.read(account: name) { bytes, _ in LoginCredential(account: name, passwordBytes: bytes) }
        }
    }

    /// Erases `credential`'s item only while it still holds that password; returns whether it did.
    private func eraseIfUnchanged(_ credential: LoginCredential) async throws(KeychainError) -> Bool {
        let scope = self.scope
        return try await BlockingCall.run { () throws(KeychainError) in
            try scope.remove(account: credential.account, ifSecretMatches: credential) > 0
        }
    }

    /// Stores `credential`'s password for `account`; returns the error instead of throwing it,
    /// because the login it follows has already succeeded.
    private func store(_ credential: LoginCredential, as account: String) async -> KeychainError? {
        let scope = self.scope
        do {
            try await BlockingCall.run { () throws(KeychainError) in
                try Validation.text(account, field: "account")
                try Validation.secretSize(credential.buffer.count)
                try scope.write(
                    account: account, secret: credential.buffer, contentType: SecretCoding.textType, label: nil,
                    comment: nil)
            }
            return nil
        } catch {
            return error
        }
    }

    /// Stores `credential`'s password under `account`, then erases the old item if it still
    /// holds that password.
    private func move(_ credential: LoginCredential, to account: String) async -> KeychainError? {
        if let error = await store(credential, as: account) { return error }
        do {
            _ = try await eraseIfUnchanged(credential)
            return nil
        } catch {
            return error
        }
    }
}

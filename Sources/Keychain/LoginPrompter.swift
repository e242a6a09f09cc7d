/// Asks a person for an account and password on behalf of the login flow
/// (``Keychain/login(account:remember:prompt:maximumPrompts:authenticate:)``).
///
/// The library ships ``TerminalLoginPrompter`` and ``PinentryLoginPrompter``, and
/// ``FirstAvailableLoginPrompter`` to try several in order; an application with a window
/// implements this protocol with its own login dialog.
public protocol LoginPrompter: Sendable {
    /// Shows `request` and returns what the person entered, or `nil` when they cancelled.
    ///
    /// An implementation that waits for a person runs on a thread of its own, never blocking the
    /// cooperative pool.
    ///
    /// - Throws: ``KeychainError/noPrompter(reason:)`` at once when it has no way to ask (no
    ///   terminal, no pinentry); the flow never waits for a prompter that cannot show.
    func ask(_ request: LoginPromptRequest) async throws(KeychainError) -> LoginAnswer?
}

/// What a ``LoginPrompter`` is asked to show.
public struct LoginPromptRequest: Sendable, Equatable {
    /// Why the person is asked.
    public enum Reason: Sendable, Equatable {
        /// Nothing is remembered for this service and account.
        case noRememberedCredential
        /// The remembered password was tried and rejected (and erased, unless it had been
        /// changed in the keyring meanwhile).
        case rememberedRejected
        /// The password entered at the previous prompt was rejected.
        case rejected
    }

    /// The service the credential is for.
    public var service: String
    /// The account to pre-fill; the person may change it. `nil` when none is known.
    public var account: String?
    /// Why the person is asked.
    public var reason: Reason
    /// Which prompt this is, from 1 to ``maximumAttempts``.
    public var attempt: Int
    /// How many prompts the flow shows at most before it gives up.
    public var maximumAttempts: Int
    /// Whether to ask "Remember the password?"; when `false` the answer's
    /// ``LoginAnswer/remember`` is ignored.
    public var asksToRemember: Bool

    /// A request with these fields.
    public init(
        service: String, account: String?, reason: Reason, attempt: Int, maximumAttempts: Int, asksToRemember: Bool
    ) {
        self.service = service
        self.account = account
        self.reason = reason
        self.attempt = attempt
        self.maximumAttempts = maximumAttempts
        self.asksToRemember = asksToRemember
    }

    /// One sentence saying why the person is asked again, or `nil` on a first prompt; it never
    /// contains a secret.
    public var message: String? {
        switch reason {
        case .noRememberedCredential: return nil
        case .rememberedRejected: return "The remembered password was not accepted."
        case .rejected: return "The password was not accepted (attempt \(attempt) of \(maximumAttempts))."
        }
    }
}

/// What the person entered at a prompt.
public struct LoginAnswer: Sendable {
    /// The account and password.
    public var credential: LoginCredential
    /// Whether the person asked to remember the password (stored only once it is accepted).
    public var remember: Bool

    /// An answer with this credential and choice.
    public init(credential: LoginCredential, remember: Bool) {
        self.credential = credential
        self.remember = remember
    }
}

/// Tries several prompters in order and uses the first that can ask: one that throws
/// ``KeychainError/noPrompter(reason:)`` passes the request on to the next.
public struct FirstAvailableLoginPrompter: LoginPrompter {
    /// The prompters, in the order they are tried.
    public var prompters: [any LoginPrompter]

    /// A prompter that tries `prompters` in order.
    public init(_ prompters: [any LoginPrompter]) {
        self.prompters = prompters
    }

    /// The terminal (`/dev/tty`) when there is one, otherwise pinentry (`$PINENTRY`, or
    /// `pinentry` on `PATH`).
    public static var standard: FirstAvailableLoginPrompter {
        FirstAvailableLoginPrompter([TerminalLoginPrompter(), PinentryLoginPrompter()])
    }

    /// Asks through the first prompter that can.
    ///
    /// - Throws: ``KeychainError/noPrompter(reason:)`` naming every reason when none can ask.
    public func ask(_ request: LoginPromptRequest) async throws(KeychainError) -> LoginAnswer? {
        var reasons: [String] = []
        for prompter in prompters {
            do {
                return try await prompter.ask(request)
            } catch .noPrompter(let reason) {
                reasons.append(reason)
            }
        }
        throw .noPrompter(reason: reasons.isEmpty ? "no prompter given" : reasons.joined(separator: "; "))
    }
}

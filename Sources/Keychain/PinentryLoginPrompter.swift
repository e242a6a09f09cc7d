import FoundationEssentials
import Pinentry

/// Asks through pinentry (the dialog GnuPG uses), for sessions without a terminal.
///
/// The program is ``program`` when set, otherwise `$PINENTRY`, otherwise `pinentry` found on
/// `PATH`. pinentry shows a password field only, so the account must be known: given to the
/// login call, or remembered. Whether to remember the password is a second dialog with the
/// buttons "Remember" and "Not now" (Cancel there means "Not now").
///
/// When no program is found or it cannot run (no display and no terminal), ``ask(_:)`` throws
/// ``KeychainError/noPrompter(reason:)`` at once.
public struct PinentryLoginPrompter: LoginPrompter {
    /// The pinentry program; `nil` means `$PINENTRY`, then `pinentry` on `PATH`.
    public var program: String?

    /// A prompter running `program` (a path, or a name looked up in `PATH`), or by default
    /// `$PINENTRY` or `pinentry`.
    public init(program: String? = nil) {
        self.program = program
    }

    /// Asks for the password of the request's account and, when asked to, whether to remember it.
    ///
    /// - Throws: ``KeychainError/noPrompter(reason:)`` when there is no pinentry, it cannot run,
    ///   or the request has no account (pinentry cannot ask for one).
    public func ask(_ request: LoginPromptRequest) async throws(KeychainError) -> LoginAnswer? {
        let program = try resolvedProgram()
        guard let account = request.account else {
            throw .noPrompter(reason: "pinentry cannot ask for an account name; give one")
        }
        return try await BlockingCall.run { () throws(KeychainError) in
            let dialog = PinentryRequest(
                title: "Log in to \(request.service)",
                description: "Enter the password for \(account) on \(request.service).",
                prompt: "Password:", error: request.message)
            let outcome = Pinentry.ask(program: program, dialog) { bytes in
                LoginCredential(account: account, passwordBytes: bytes)
            }
            switch outcome {
            case .cancelled:
                return nil
            case .failed(let reason):
                throw .noPrompter(reason: reason)
            case .password(let credential):
                var remember = false
                if request.asksToRemember {
                    remember = Pinentry.choose(
                        program: program, title: "Log in to \(request.service)",
                        description: "Remember the password for \(account) on \(request.service) in the keyring?",
                        ok: "Remember", notOK: "Not now", cancel: "Cancel") == .ok
                }
                return LoginAnswer(credential: credential, remember: remember)
            }
        }
    }

    /// The program to run, as a path.
    private func resolvedProgram() throws(KeychainError) -> String {
        let environment = ProcessInfo.processInfo.environment
        let name = program ?? environment["PINENTRY"].flatMap { $0.isEmpty ? nil : $0 } ?? "pinentry"
        if name.contains("/") { return name }
        for directory in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw .noPrompter(reason: "no pinentry ('\(name)' is not on PATH; set PINENTRY)")
    }
}

import KeychainCore
import Keychain

// The one place where the library's errors become secretctl's messages and exit statuses
// (EXIT STATUS in secretctl(1)). A new KeychainError case is added here, and nowhere else.

extension CommandLineError {
    /// The message and exit status for a library error.
    init(_ error: KeychainError) {
        switch error {
        case .locked: self = .failure("the keyring is locked; unlock it (secretctl unlock) and retry", status: .locked)
        case .cancelled: self = .failure("the prompt was dismissed", status: .locked)
        case .noPrompter(let reason): self = .failure("cannot ask for the password: \(reason)", status: .locked)
        case .accessDenied(let message): self = .failure("access denied: \(message)", status: .accessDenied)
        case .noProvider(let reason):
            self = .failure("no Secret Service provider (start secretd or gnome-keyring): \(reason)", status: .noProvider)
        case .invalidInput(let reason): self = .usage("\(reason)", command: nil)
        case .unexpectedData(let reason): self = .failure(reason, status: .failed)
        case .noSuchKeyring: self = .failure(error.description, status: .notFound)
        case .notSupported, .protocolError, .backend: self = .failure(error.description, status: .failed)
        }
    }

    /// Wraps a library call, turning its error into the exit status and message for it.
    static func keychain<T>(_ body: () throws(KeychainError) -> T) throws(CommandLineError) -> T {
        do {
            return try body()
        } catch {
            throw CommandLineError(error)
        }
    }
}

import FoundationEssentials
import Glibc
import Keychain
import KeychainCore

/// `secretctl unlock [--password-stdin]`: unlocks the default keyring through the provider's
/// prompt or with its password; creates the login keyring when there is none yet.
enum UnlockCommand: Verb {
    /// `--password-stdin`: the password instead of the provider's prompt.
    static let passwordStdin = LongOption<Bool>(
        "password-stdin", help: "Give the password (typed without echo, or on standard input) instead of a prompt.")

    /// `--pin`: the PIN (secretctl pin) instead of the password.
    static let pin = LongOption<Bool>(
        "pin", help: "Unlock the login keyring with its PIN (typed without echo, or on standard input; secretd).")

    static let spec = CommandSpec(
        name: "unlock", abstract: "Unlock the default keyring, through the provider's prompt, with its password or with a PIN.",
        arguments: [], options: [passwordStdin, pin],
        examples: ["secretctl unlock --password-stdin < ~/.config/secretd/login-password", "secretctl unlock --pin"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        if parsed[Self.pin] {
            guard !parsed[Self.passwordStdin] else { throw .usage("--pin and --password-stdin exclude each other", command: spec.name) }
            let status = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.pinStatus() }
            guard status.set else { throw .failure("no PIN is set (secretctl pin set); unlock with the password", status: .failed) }
            var typed = try Terminal.readSecretLine(limit: 256, prompt: "PIN: ")
            defer { typed.wipe() }
            let code = typed
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.unlock(pin: code) }
            return
        }
        // No login keyring yet (a first run without PAM): create it with this password.
        let exists = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.hasKeyring() }
        if parsed[Self.passwordStdin] {
            var password = try Terminal.readSecretLine(
                limit: KeychainLimits.passwordSize, prompt: exists ? "Password: " : "New login keyring password: ")
            defer { password.wipe() }
            let secret = password
            if exists {
                try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.unlock(password: secret) }
                return
            }
            guard !secret.isEmpty else { throw .usage("the password is empty; the login keyring was not created", command: spec.name) }
            if Terminal.isTerminal(STDIN_FILENO) {
                var repeated = [UInt8](try Terminal.readHidden(prompt: "Repeat the password: "))
                defer { repeated.wipe() }
                guard repeated == secret else { throw .failure("the passwords differ; nothing was created", status: .usage) }
            }
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.createLoginKeyring(password: secret) }
            Terminal.writeError("secretctl: created the login keyring; it is unlocked\n")
        } else if exists {
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.unlock(password: nil) }
        } else {
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.createLoginKeyring(password: nil) }
            Terminal.writeError("secretctl: created the login keyring; it is unlocked\n")
        }
    }
}

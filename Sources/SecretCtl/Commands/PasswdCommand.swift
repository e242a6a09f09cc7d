import FoundationEssentials
import Glibc
import Keychain
import KeychainCore

/// `secretctl passwd [--password-stdin]`: changes the default keyring's password, through the
/// provider's prompt or with both passwords given.
enum PasswdCommand: Verb {
    /// `--password-stdin`: both passwords instead of the provider's prompt.
    static let passwordStdin = LongOption<Bool>(
        "password-stdin",
        help: "Give the passwords: typed without echo, or two lines on standard input (current, then new).")

    static let spec = CommandSpec(
        name: "passwd", abstract: "Change the default keyring's password, through the provider's prompt or directly.",
        arguments: [], options: [passwordStdin],
        examples: ["printf '%s\\n%s\\n' \"$OLD\" \"$NEW\" | secretctl passwd --password-stdin"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        guard parsed[Self.passwordStdin] else {
            try CommandLineError.keychain { () throws(KeychainError) in
                try KeychainProvider.changePassword(current: nil, new: nil)
            }
            return
        }
        var current: [UInt8]
        var new: [UInt8]
        if Terminal.isTerminal(STDIN_FILENO) {
            current = [UInt8](try Terminal.readHidden(prompt: "Current password: "))
            new = [UInt8](try Terminal.readHidden(prompt: "New password: "))
            let repeated = [UInt8](try Terminal.readHidden(prompt: "Repeat the new password: "))
            guard repeated == new else { throw .failure("the new passwords differ; nothing changed", status: .usage) }
        } else {
            var input = [UInt8](try Terminal.readSecret(limit: 128 * 1024))
            defer { input.wipe() }
            guard let newline = input.firstIndex(of: UInt8(ascii: "\n")) else {
                throw .usage("give the current and the new password on two lines", command: spec.name)
            }
            current = Array(input[..<newline])
            new = Array(input[(newline + 1)...])
            if new.last == UInt8(ascii: "\n") { new.removeLast() }
        }
        defer {
            current.wipe()
            new.wipe()
        }
        guard !new.isEmpty else { throw .usage("the new password is empty", command: spec.name) }
        let (old, fresh) = (current, new)
        try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainProvider.changePassword(current: old, new: fresh)
        }
    }
}

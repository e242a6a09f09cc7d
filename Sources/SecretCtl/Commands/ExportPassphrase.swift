import FoundationEssentials
import Glibc
import KeychainCore

/// The passphrase of an export file, for `export` and `import`.
enum ExportPassphrase {
    /// Typed without echo on a terminal (twice when `confirm`, as for a new file), otherwise the
    /// first line of standard input; empty only when `allowEmpty` (a KeePass database opened
    /// with its key file alone). `what` names it in the prompt and the errors.
    static func read(confirm: Bool, what: String = "passphrase", allowEmpty: Bool = false) throws(CommandLineError) -> Data {
        var passphrase: Data
        if Terminal.isTerminal(STDIN_FILENO) {
            passphrase = try Terminal.readHidden(prompt: what.prefix(1).uppercased() + what.dropFirst() + ": ")
            if confirm, try Terminal.readHidden(prompt: "Repeat the passphrase: ") != passphrase {
                throw .failure("the passphrases differ", status: .usage)
            }
        } else {
            var input = try Terminal.readSecret(limit: KeychainLimits.passwordSize)
            defer { input.wipe() }
            passphrase = input.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first
                .map { Data($0) } ?? Data()
        }
        guard !passphrase.isEmpty || allowEmpty else { throw .usage("the \(what) is empty", command: nil) }
        return passphrase
    }
}

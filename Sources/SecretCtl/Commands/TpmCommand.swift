import KeychainCore
import FoundationEssentials
import Glibc
import Keychain

/// `secretctl tpm enroll|remove|status`: the login keyring's TPM slot, with which secretd
/// unlocks the keyring when it starts, with no password (servers that boot unattended).
enum TpmCommand: Verb {
    /// `ACTION`: enroll, remove or status.
    static let action = Positional<String>("ACTION", help: "enroll, remove or status.")
    /// `--pcrs LIST`: bind the slot to these PCRs' present values.
    static let pcrs = LongOption<String?>(
        "pcrs", value: "LIST",
        help: "With enroll: bind the slot to the present values of these SHA-256 PCRs (comma-separated, 0 to 23; e.g. 7).")

    static let spec = CommandSpec(
        name: "tpm", abstract: "Enroll, remove or show the TPM slot that unlocks the login keyring at start (secretd).",
        arguments: [action], options: [pcrs, Common.json],
        examples: ["secretctl tpm enroll --pcrs 7", "secretctl tpm enroll < password-file", "secretctl tpm status", "secretctl tpm remove"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        switch parsed[Self.action] {
        case "enroll":
            let bound = try pcrList(parsed[Self.pcrs])
            var password = try Terminal.readSecretLine(limit: KeychainLimits.passwordSize, prompt: "Login password: ")
            defer { password.wipe() }
            let secret = password
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.enrollTPM(password: secret, pcrs: bound) }
            Terminal.writeError(
                "secretctl: the login keyring's key is sealed to this machine's TPM"
                    + (bound.isEmpty ? "" : " (PCR \(bound.map(String.init).joined(separator: ", ")))")
                    + "; secretd unlocks it when it starts\n")
        case "remove":
            let removed = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.removeTPM() }
            Terminal.writeError(removed ? "secretctl: TPM slot removed; only the password unlocks the login keyring\n" : "secretctl: no TPM slot\n")
        case "status":
            let status = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.tpmStatus() }
            if parsed[Common.json] {
                try Output.json([
                    "enrolled": status.enrolled, "pcrs": status.pcrs, "tcti": status.tcti,
                    "last_failure": status.lastFailure.isEmpty ? nil : status.lastFailure,
                ])
            } else {
                var text = status.enrolled
                    ? "TPM slot enrolled, " + (status.pcrs.isEmpty ? "bound to no PCR" : "bound to PCR " + status.pcrs.map(String.init).joined(separator: ", "))
                    : "no TPM slot"
                text += " (TCTI \(status.tcti))\n"
                if !status.lastFailure.isEmpty { text += "at start: \(status.lastFailure)\n" }
                Terminal.writeOutput(text)
            }
        case let other:
            throw .usage("unknown tpm action '\(other)' (enroll, remove, status)", command: spec.name)
        }
    }

    /// The PCRs of `--pcrs` (none when not given); a usage error for anything but 0 to 23.
    private static func pcrList(_ text: String?) throws(CommandLineError) -> [Int] {
        guard let text else { return [] }
        let numbers = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0.trimmingWhitespace) }
        guard !numbers.isEmpty, numbers.allSatisfy({ $0.map((0...23).contains) == true }) else {
            throw .usage("--pcrs takes a comma-separated list of PCR numbers, 0 to 23", command: spec.name)
        }
        return numbers.compactMap { $0 }
    }
}

import KeychainCore
import FoundationEssentials
import Glibc
import Keychain

/// `secretctl pin set|clear|status`: the PIN that unlocks the login keyring again after it
/// locked (idle, suspend, screen lock, `secretctl lock`), kept in secretd's memory only.
enum PinCommand: Verb {
    /// `ACTION`: set, clear or status.
    static let action = Positional<String>("ACTION", help: "set, clear or status.")
    /// `--stdin`: the login password and the PIN on standard input, one line each.
    static let stdin = LongOption<Bool>(
        "stdin", help: "With set: read the login password, then the PIN, one line each, from standard input.")

    static let spec = CommandSpec(
        name: "pin", abstract: "Set, clear or show the PIN that unlocks the login keyring after it locked (secretd).",
        arguments: [action], options: [Common.json, stdin],
        examples: ["secretctl pin set", "printf '%s\\n%s\\n' \"$PASSWORD\" 4711 | secretctl pin set --stdin", "secretctl pin status"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        switch parsed[Self.action] {
        case "set":
            var (password, pin) = try readPasswordAndPIN(fromStandardInput: parsed[Self.stdin])
            defer { password.wipe(); pin.wipe() }
            guard KeychainLimits.pinLength.contains(pin.count) else {
                throw .usage("a PIN has \(KeychainLimits.pinLength.lowerBound) to \(KeychainLimits.pinLength.upperBound) characters",
                             command: spec.name)
            }
            let (secret, code) = (password, pin)
            try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.setPin(code, password: secret) }
            Terminal.writeError(
                "secretctl: PIN set; it unlocks the login keyring until secretd stops, \(KeychainLimits.pinAttempts) wrong PINs, or secretctl pin clear\n")
        case "clear":
            let wasSet = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.clearPin() }
            Terminal.writeError(wasSet ? "secretctl: PIN cleared; only the password unlocks the login keyring\n" : "secretctl: no PIN was set\n")
        case "status":
            let status = try CommandLineError.keychain { () throws(KeychainError) in try KeychainProvider.pinStatus() }
            if parsed[Common.json] {
                try Output.json(["set": status.set, "tries_left": status.triesLeft])
            } else {
                Terminal.writeOutput(status.set ? "PIN set, \(status.triesLeft) tries left\n" : "no PIN set\n")
            }
        case let other:
            throw .usage("unknown pin action '\(other)' (set, clear, status)", command: spec.name)
        }
    }

    /// The login password and the new PIN: typed without echo (the PIN twice), or two lines of
    /// standard input.
    private static func readPasswordAndPIN(fromStandardInput: Bool) throws(CommandLineError) -> ([UInt8], [UInt8]) {
        if fromStandardInput || !Terminal.isTerminal(STDIN_FILENO) {
            var input = [UInt8](try Terminal.readStandardInput(limit: KeychainLimits.passwordSize + 128, what: "the password and PIN"))
            defer { input.wipe() }
            let lines = input.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false)
            guard lines.count == 2 else {
                throw .usage("standard input must hold the login password, then the PIN, one line each", command: spec.name)
            }
            var pin = Array(lines[1])
            if pin.last == UInt8(ascii: "\n") { pin.removeLast() }
            return (Array(lines[0]), pin)
        }
        let password = [UInt8](try Terminal.readHidden(prompt: "Login password: "))
        var pin = [UInt8](try Terminal.readHidden(prompt: "New PIN: "))
        var repeated = [UInt8](try Terminal.readHidden(prompt: "Repeat the PIN: "))
        defer { repeated.wipe() }
        guard pin == repeated else {
            pin.wipe()
            throw .failure("the PINs differ; no PIN was set", status: .usage)
        }
        return (password, pin)
    }
}

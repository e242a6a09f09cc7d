import FoundationEssentials
import Glibc
import Keychain
import KeychainCore

/// `secretctl export FILE`: every item this process can see, sealed under a passphrase in
/// ``ExportFile``'s format; items of a device-only class only when asked.
enum ExportCommand: Verb {
    /// `FILE`, created with mode 0600.
    static let file = Positional<String>("FILE", help: "The file to create (mode 0600).")
    /// `--force`: overwrite FILE.
    static let force = LongOption<Bool>("force", help: "Overwrite FILE if it exists.")
    /// `--include-device-only`: export items whose class says they stay on this machine.
    static let includeDeviceOnly = LongOption<Bool>(
        "include-device-only", help: "Also export items of the classes *-device-only, which otherwise stay on this machine.")

    static let spec = CommandSpec(
        name: "export", abstract: "Write every item you can see to FILE, encrypted with a passphrase.",
        arguments: [file], options: [force, includeDeviceOnly],
        examples: ["secretctl export keyring.export          # asks for a passphrase twice"])

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let path = parsed[Self.file]
        let matches = try CommandLineError.keychain { () throws(KeychainError) in
            try KeychainAttributes.search([:], unlock: true, loadSecrets: true)
        }
        // A partial export would look complete; refuse it while anything is locked.
        let locked = matches.filter { $0.secret == nil }.count
        guard locked == 0 else {
            throw .failure("\(locked) items are in a locked keyring; unlock it (secretctl unlock) and retry", status: .locked)
        }
        let deviceOnly = matches.filter { ItemAccessibility(attributes: $0.attributes).isDeviceOnly }.count
        let exported = parsed[Self.includeDeviceOnly] ? matches : matches.filter { !ItemAccessibility(attributes: $0.attributes).isDeviceOnly }
        let items = exported.compactMap { match in
            match.secret.map { ExportFile.Item(label: match.label, attributes: match.attributes, secret: $0) }
        }
        let sealed = try ExportFile.seal(items, passphrase: try ExportPassphrase.read(confirm: true))
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (parsed[Self.force] ? O_TRUNC : O_EXCL)
        let file = open(path, flags, 0o600)
        guard file >= 0 else {
            throw .failure(errno == EEXIST ? "\(path) exists; use --force to overwrite it" : "cannot create \(path)", status: .usage)
        }
        defer { close(file) }
        let written = sealed.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        guard written == sealed.count else { throw .failure("cannot write \(path)", status: .failed) }
        Terminal.writeOutput("exported \(items.count) items to \(path)\n")
        if deviceOnly > 0 && !parsed[Self.includeDeviceOnly] {
            Terminal.writeOutput("left out \(deviceOnly) device-only items (--include-device-only exports them)\n")
        }
    }
}
